// SPDX-License-Identifier: GPL-2.0-or-later
// Where an image is: a host path or an NBD URI (docs/nbd.md). Pure string work, no I/O, so
// the readers that resolve a parent's recorded name can do it for either kind of location.
#pragma once

#include <string>
#include <string_view>

namespace guestfrag {

/// True when `location` is an NBD URI in one of libnbd's schemes: nbd://, nbds://,
/// nbd+unix://, nbds+unix://, nbd+vsock://, nbds+vsock:// (case as written by libnbd).
[[nodiscard]] bool is_nbd_uri(std::string_view location) noexcept;

/// `name`, a relative file name a layer records for a sibling or parent file ('/'
/// separators), resolved against the location of `child`:
///  - a host path: the child's directory joined with `name`, as written (no normalisation);
///  - an NBD URI: the same server and query, with the export name's directory joined with
///    `name` (percent-encoded, leading '/' dropped) and normalised ("a/../b" is "b"), so a
///    server exporting a directory's files by name (nbdkit's file plugin with dir=) serves a
///    chain's parents beside their child; nothing in `name` changes the server or query.
[[nodiscard]] std::string sibling_path(const std::string& child, const std::string& name);

/// sibling_path with a host path lexically normalised too ("dir/./a" is "dir/a").
[[nodiscard]] std::string normal_sibling_path(const std::string& child, const std::string& name);

/// The export name of an NBD URI as written (percent escapes left as they are): the path
/// without its leading '/'. `uri` must satisfy is_nbd_uri.
[[nodiscard]] std::string nbd_export_name(const std::string& uri);

/// The last component of a location: a path's file name, an NBD URI's export name's (what
/// a window title or a list shows for the image).
[[nodiscard]] std::string location_file_name(const std::string& location);

/// The server part of an NBD URI, without export name, query or credentials
/// ("nbd://host:10809", "nbd+unix:///?socket=/run/x.sock"): what batch records as the
/// image's datastore. `uri` must satisfy is_nbd_uri.
[[nodiscard]] std::string nbd_server(const std::string& uri);

}  // namespace guestfrag
