// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <string>

#include <QString>

#include "app/gui/new_disk_dialog.hpp"
#include "pipeline/compact.hpp"

class QLineEdit;

namespace guestfrag::gui {

/// What File ▸ Compact to a new image asks compact_to_copy to do (docs/gui.md).
struct CompactRequest {
    std::string output;
    CompactFormat format = CompactFormat::Raw;
    std::uint64_t granule = 0;  ///< bytes; 0: default_granule(format)
    bool pack = true;
    bool verify = true;
    std::uint64_t rate = 0;  ///< bytes per second; 0: no limit
};

/// Why `request` cannot start for the image `image` (empty: it can): no output, an output
/// that exists (a compaction never replaces a file, as `guestfrag compact`), the input
/// itself or one of its layers (output_refusal), or a granule the format cannot allocate in
/// (check_granule's reason). The rest is refused by compact_to_copy itself.
[[nodiscard]] QString compact_refusal(const CompactRequest& request, const DiskImage& image);

/// The output offered for the image at `path`: beside it, named after it ("disk.vmdk" →
/// "disk.compact.img" for raw, "disk.compact.qcow2", ".vmdk", ".vhdx"), with "-2", "-3", ...
/// added when that file exists (default_output).
[[nodiscard]] QString default_compact_output(const QString& path, CompactFormat format);

/// "1MiB", "64KiB" or "512": a granule as the granule field shows it and parse_size reads it.
[[nodiscard]] QString granule_text(std::uint64_t bytes);

/// The settings of a compaction: output file, output format (raw, qcow2, vmdk, vhdx), the
/// granule (the format's default_granule, set again when the format changes), packing,
/// verification and rate limit. Interactive only: accepting refuses what compact_refusal
/// refuses, and a granule that is not a size. Object names of its own fields: "granule",
/// "pack".
class CompactDialog : public NewDiskDialog {
    Q_OBJECT
public:
    /// `image` (opened from `path`, with `volumes` NTFS volumes) is borrowed for the
    /// dialog's life.
    CompactDialog(const QString& path, const DiskImage& image, std::size_t volumes,
                  QWidget* parent = nullptr);

    /// The request the fields describe (valid after the dialog was accepted).
    [[nodiscard]] const CompactRequest& request() const { return request_; }

    void accept() override;

protected:
    void browse() override;

private:
    void format_changed();
    [[nodiscard]] CompactFormat format() const;

    CompactRequest request_;
    QLineEdit* granule_;
    QCheckBox* pack_;
};

}  // namespace guestfrag::gui
