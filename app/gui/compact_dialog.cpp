// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/compact_dialog.hpp"

#include <array>

#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>

#include "core/error.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::gui {

namespace {

/// The formats in the order the format list shows them.
constexpr std::array kFormats{CompactFormat::Raw, CompactFormat::Qcow2, CompactFormat::Vmdk,
                              CompactFormat::Vhdx};

QString name_of(CompactFormat format) { return QString::fromLatin1(compact_format_name(format)); }

/// What the output is and what its granule means in it (docs/compact.md §2).
QString note_of(CompactFormat format) {
    switch (format) {
        case CompactFormat::Raw:
            return QObject::tr(
                "A sparse raw disk of the input's full virtual size that stores only what NTFS "
                "uses. The granule is the block the storage under it allocates in (VMFS-6's "
                "file block, an array's UNMAP granule): a power of two of at least 4 KiB.");
        case CompactFormat::Qcow2:
            return QObject::tr(
                "Converted by qemu-img from the verified raw disk (which needs room beside the "
                "output while it runs). The granule is its cluster size: 512 B to 2 MiB.");
        case CompactFormat::Vmdk:
            return QObject::tr(
                "A monolithicSparse VMDK converted by qemu-img from the verified raw disk. The "
                "granule is its grain: 64 KiB only.");
        case CompactFormat::Vhdx:
            return QObject::tr(
                "A dynamic VHDX converted by qemu-img from the verified raw disk. The granule "
                "is its block size: 1 MiB to 256 MiB.");
    }
    return {};
}

}  // namespace

QString compact_refusal(const CompactRequest& request, const DiskImage& image) {
    if (QString why = output_refusal(request.output, image, false,
                                     QObject::tr("%1 exists; a compaction never replaces a file."));
        !why.isEmpty())
        return why;
    try {
        if (request.granule != 0) check_granule(request.format, request.granule);
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

QString default_compact_output(const QString& path, CompactFormat format) {
    return default_output(path, QStringLiteral("compact"),
                          format == CompactFormat::Raw ? QStringLiteral("img") : name_of(format));
}

QString granule_text(std::uint64_t bytes) {
    constexpr std::uint64_t kKiB = 1024;
    if (bytes != 0 && bytes % (kKiB * kKiB) == 0) return QStringLiteral("%1MiB").arg(bytes / (kKiB * kKiB));
    if (bytes != 0 && bytes % kKiB == 0) return QStringLiteral("%1KiB").arg(bytes / kKiB);
    return QString::number(bytes);
}

CompactDialog::CompactDialog(const QString& path, const DiskImage& image, std::size_t volumes,
                             QWidget* parent)
    : NewDiskDialog(path, image, tr("Compact to a new image"),
                    tr("Writes a new image that holds only what the disk's %n NTFS volume(s) use, their "
                       "data first packed into the fewest granules, and proves it. %1 itself is only read.",
                       nullptr, static_cast<int>(volumes))
                        .arg(image_file_name(path)),
                    tr("Compact"), parent),
      granule_(new QLineEdit),
      pack_(new QCheckBox(tr("Pack the data into the fewest granules first"))) {
    granule_->setObjectName(QStringLiteral("granule"));
    pack_->setObjectName(QStringLiteral("pack"));
    format_->addItem(tr("raw (sparse)"));
    format_->addItem(tr("qcow2"));
    format_->addItem(tr("vmdk (monolithicSparse)"));
    format_->addItem(tr("vhdx (dynamic)"));
    granule_->setToolTip(tr("The host block to pack into, e.g. 64KiB, 1MiB (as --granule)"));
    pack_->setChecked(true);
    pack_->setToolTip(
        tr("Move data out of the sparsest granules into free room of the others (strategy shrink), "
           "so that more granules hold nothing; off: only leave out what NTFS does not use."));
    verify_->setToolTip(
        tr("Hash every stream of both disks and compare the output's allocation, $Bitmap and "
           "$MFTMirr with the packing's prediction, then check the container; the output is kept "
           "only when all of them pass."));
    add_row(tr("Granule"), granule_);
    add_row(QString(), pack_);

    connect(format_, &QComboBox::currentIndexChanged, this, &CompactDialog::format_changed);
    format_changed();
}

CompactFormat CompactDialog::format() const {
    const int index = format_->currentIndex();
    return index >= 0 && static_cast<std::size_t>(index) < kFormats.size()
               ? kFormats[static_cast<std::size_t>(index)]
               : CompactFormat::Raw;
}

void CompactDialog::browse() {
    // An existing file is refused on accept: the file dialog need not ask about replacing it.
    const CompactFormat f = format();
    (void)choose_output(f == CompactFormat::Raw
                            ? tr("Raw disk (*.img *.raw);;All files (*)")
                            : tr("%1 image (*.%2);;All files (*)").arg(name_of(f).toUpper(), name_of(f)),
                        false);
}

void CompactDialog::format_changed() {
    // A granule one format takes is often one another refuses (vmdk's 64 KiB grain, vhdx's
    // 1 MiB minimum): each format starts from its own default.
    granule_->setText(granule_text(default_granule(format())));
    suggest_output(default_compact_output(path_, format()));
    set_format_note(note_of(format()));
}

void CompactDialog::accept() {
    request_ = {};
    request_.output = output_path();
    request_.format = format();
    request_.pack = pack_->isChecked();
    request_.verify = verify_->isChecked();
    const QString granule = granule_->text().trimmed();
    if (!granule.isEmpty()) {
        const auto bytes = parse_size(granule.toStdString());
        if (!bytes || *bytes == 0)
            return refuse(tr("Granule: '%1' is not a size (e.g. 64KiB, 1MiB)").arg(granule));
        request_.granule = *bytes;
    }
    const std::optional<std::uint64_t> rate = read_rate();
    if (!rate) return;
    request_.rate = *rate;
    if (const QString refusal = compact_refusal(request_, image_); !refusal.isEmpty()) return refuse(refusal);
    QDialog::accept();
}

}  // namespace guestfrag::gui
