// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target for the NBD URI helpers that resolve the names a layer records against
// an image on a server (core/image/nbd_uri.hpp). The input is a child location and a
// recorded name, split at the first NUL. Whatever the name, its sibling must stay on the
// child's server with the child's query: a hostile image cannot send a parent lookup to
// another server.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/image/nbd_uri.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const std::size_t cut = input.find('\0');
    if (cut == std::string_view::npos) return 0;
    const std::string child(input.substr(0, cut));
    const std::string name(input.substr(cut + 1));
    const std::string sibling = guestfrag::sibling_path(child, name);
    (void)guestfrag::location_file_name(sibling);
    if (!guestfrag::is_nbd_uri(child)) return 0;
    if (!guestfrag::is_nbd_uri(sibling)) std::abort();
    if (guestfrag::nbd_server(sibling) != guestfrag::nbd_server(child)) std::abort();
    // The query (TLS settings included) travels unchanged.
    const std::size_t query = child.find_first_of("?#", child.find("://") + 3);
    if (query != std::string::npos && !sibling.ends_with(child.substr(query))) std::abort();
    (void)guestfrag::nbd_export_name(sibling);
    return 0;
}
