// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <QDialog>
#include <QString>

#include "core/image/disk_image.hpp"

class QCheckBox;
class QComboBox;
class QFormLayout;
class QLabel;
class QLineEdit;

namespace guestfrag::gui {

/// Why no new disk may be written at `output` for the input `image` (empty: one may): no
/// output chosen; what check_apply_output refuses (the input itself or one of its layers,
/// something other than a regular file, a directory where no file can be created); or an
/// output that exists when it may not be `replace`d (`exists` says so, its %1 the file).
/// What the dialogs of File ▸ Apply plan to a copy and File ▸ Compact to a new image check
/// first.
[[nodiscard]] QString output_refusal(const std::string& output, const DiskImage& image, bool replace,
                                     const QString& exists);

/// The image's file name as a dialog names it: a path's last component, an NBD URI's
/// export name's (location_file_name).
[[nodiscard]] QString image_file_name(const QString& path);

/// A new file beside the image at `path`, named after it with `tag` and `suffix`
/// ("disk.vmdk", "defrag", "img" → "disk.defrag.img"), with "-2", "-3", ... added to the tag
/// when that file exists, so that a default never replaces anything.
[[nodiscard]] QString default_output(const QString& path, const QString& tag, const QString& suffix);

/// What the dialogs that write a new disk from the image (Apply plan to a copy, Compact to a
/// new image) ask alike: the output file with Browse…, its format, verification and a rate
/// limit, then OK and Cancel. A subclass fills the format list, adds its own rows, and turns
/// the fields into its request when accepted. The fields' object names ("output", "format",
/// "verify", "rate") let tests find them.
class NewDiskDialog : public QDialog {
    Q_OBJECT
protected:
    /// For the image opened from `path` as `image` (borrowed for the dialog's life);
    /// `intro` heads the dialog, `ok` names its OK button.
    NewDiskDialog(const QString& path, const DiskImage& image, const QString& title, const QString& intro,
                  const QString& ok, QWidget* parent);

    /// Adds a row below the format's note, above Verify.
    void add_row(const QString& label, QWidget* field);
    /// Shows `suggested` as the output, unless the user typed or chose one (kept then).
    void suggest_output(const QString& suggested);
    /// A save dialog starting at the output shown, offering `filter`; a file chosen becomes
    /// the output (as if typed) and is returned, empty when none was. `confirm_overwrite`:
    /// the dialog asks before an existing file is taken.
    QString choose_output(const QString& filter, bool confirm_overwrite);
    /// The output typed, made absolute; empty when none.
    [[nodiscard]] std::string output_path() const;
    /// The rate limit typed, in bytes per second (0: none), or nullopt after telling the
    /// user it is not a rate.
    [[nodiscard]] std::optional<std::uint64_t> read_rate();
    /// Tells the user why the dialog cannot be accepted (a warning box).
    void refuse(const QString& why);

    /// Called when Browse… is pressed.
    virtual void browse() = 0;

    /// Shows `note` under the format, the dialog's height following its lines.
    void set_format_note(const QString& note);
    void showEvent(QShowEvent* event) override;

    const QString path_;
    const DiskImage& image_;
    QLineEdit* output_;
    QComboBox* format_;
    QCheckBox* verify_;
    QLineEdit* rate_;

private:
    void fit_height();

    QLabel* format_note_;
    QFormLayout* form_;
    int verify_row_ = 0;          ///< where add_row inserts
    bool output_edited_ = false;  ///< typed or chosen by the user: a format change keeps it
};

}  // namespace guestfrag::gui
