// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <string>

#include <QString>

#include "app/gui/new_disk_dialog.hpp"
#include "pipeline/apply.hpp"

namespace guestfrag::gui {

/// What File ▸ Apply plan to a copy asks apply_to_copy to do (docs/gui.md).
struct ApplyRequest {
    std::string output;
    ApplyOutputFormat format = ApplyOutputFormat::Raw;
    bool verify = true;
    std::uint64_t rate = 0;         ///< bytes per second; 0: no limit
    bool replace_existing = false;  ///< the user agreed to replace an existing output
};

/// Why `request` cannot start for the image opened from `path` as `image` (empty: it can):
/// no output, an output that exists and was not agreed to be replaced, the input itself or
/// one of its layers (output_refusal), or a qcow2 overlay the input cannot back
/// (check_qcow2_output). The rest is refused by apply_to_copy itself.
[[nodiscard]] QString apply_refusal(const ApplyRequest& request, const std::string& path,
                                    const DiskImage& image);

/// The output offered for the image at `path`: beside it, named after it
/// ("disk.vmdk" → "disk.defrag.img" or "disk.defrag.qcow2"), with "-2", "-3", ... added
/// when that file exists, so the default never replaces anything.
[[nodiscard]] QString default_apply_output(const QString& path, ApplyOutputFormat format);

/// The settings of an apply: output file, output format (qcow2 offered only where an overlay
/// of the input can be written), verification and rate limit. Interactive only: accepting
/// asks before replacing an existing file and refuses what apply_refusal refuses.
class ApplyDialog : public NewDiskDialog {
    Q_OBJECT
public:
    /// `image` (opened from `path`) is borrowed for the dialog's life.
    ApplyDialog(const QString& path, const DiskImage& image, std::size_t moves, QWidget* parent = nullptr);

    /// The request the fields describe (valid after the dialog was accepted).
    [[nodiscard]] const ApplyRequest& request() const { return request_; }

    void accept() override;

protected:
    void browse() override;

private:
    void format_changed();
    void output_changed();
    [[nodiscard]] ApplyOutputFormat format() const;

    ApplyRequest request_;
};

}  // namespace guestfrag::gui
