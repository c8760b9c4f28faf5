// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

/// GUESTFRAG_ADDRESS_SANITIZER is 1 in a build under AddressSanitizer, whichever compiler made
/// it: gcc defines __SANITIZE_ADDRESS__, clang 14 answers only __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define GUESTFRAG_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GUESTFRAG_ADDRESS_SANITIZER 1
#endif
#endif
#ifndef GUESTFRAG_ADDRESS_SANITIZER
#define GUESTFRAG_ADDRESS_SANITIZER 0
#endif
