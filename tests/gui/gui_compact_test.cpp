// SPDX-License-Identifier: GPL-2.0-or-later
// File ▸ Compact to a new image driven headless (offscreen platform): the generated image is
// compacted through the window's public entry and through its action's dialog, and what the
// dialog reports is checked against the files on disk (stat's st_blocks, lseek's data ranges,
// the bytes read), the core's own analysis of the output and the input left as it was.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <utility>
#include <vector>

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QLineEdit>
#include <QPushButton>
#include <QTimer>
#include <QtTest>

#include "analyzers/analysis.hpp"
#include "analyzers/layer_usage.hpp"
#include "app/gui/compact_dialog.hpp"
#include "app/gui/compact_progress_dialog.hpp"
#include "app/gui/files_model.hpp"
#include "app/gui/main_window.hpp"
#include "core/image/open_image.hpp"
#include "gui_checks.hpp"
#include "gui_image.hpp"

using namespace guestfrag;
using namespace guestfrag::gui;
using test::file_contents;
using test::total_fragments;
namespace fs = std::filesystem;

namespace {

constexpr int kTimeoutMs = 60'000;
constexpr std::uint64_t kMiB = 1 << 20;

/// Bytes the host holds for the file at `path`: st_blocks · 512 (0 when it cannot be read).
std::uint64_t host_bytes(const fs::path& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return 0;
    return static_cast<std::uint64_t>(st.st_blocks) * 512;
}

/// The file's data ranges [start, end) as the host reports them (lseek SEEK_DATA/SEEK_HOLE).
std::vector<std::pair<std::uint64_t, std::uint64_t>> data_ranges(const fs::path& path) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    struct File {
        int fd;
        ~File() {
            if (fd >= 0) ::close(fd);
        }
    } file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    const int fd = file.fd;
    if (fd < 0) return out;
    const off_t size = ::lseek(fd, 0, SEEK_END);
    for (off_t at = 0; at < size;) {
        const off_t data = ::lseek(fd, at, SEEK_DATA);
        if (data < 0) break;  // ENXIO: only a hole is left
        const off_t hole = ::lseek(fd, data, SEEK_HOLE);
        const off_t end = hole < 0 ? size : hole;
        out.emplace_back(static_cast<std::uint64_t>(data), static_cast<std::uint64_t>(end));
        at = end;
    }
    return out;
}

/// `granule`-byte granules of the file that hold any byte of a data range.
std::uint64_t granules_stored(const fs::path& path, std::uint64_t granule) {
    std::set<std::uint64_t> touched;
    for (const auto& [start, end] : data_ranges(path))
        for (std::uint64_t g = start / granule; g * granule < end; ++g) touched.insert(g);
    return touched.size();
}

/// `granule`-byte granules of the file that hold a byte other than zero.
std::uint64_t granules_nonzero(const fs::path& path, std::uint64_t granule) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> block(granule);
    std::uint64_t n = 0;
    while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0) {
        const auto end = block.begin() + in.gcount();
        n += std::any_of(block.begin(), end, [](char c) { return c != 0; }) ? 1 : 0;
    }
    return n;
}

/// The names in `dir`: what a run left there, temporary files included.
std::vector<std::string> entries(const fs::path& dir) {
    std::vector<std::string> out;
    for (const auto& entry : fs::directory_iterator(dir)) out.push_back(entry.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

/// The core's own reason for refusing `granule` for `format`.
QString granule_refusal(CompactFormat format, std::uint64_t granule) {
    try {
        check_granule(format, granule);
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

}  // namespace

class GuiCompactTest : public QObject {
    Q_OBJECT

    fs::path image_path_;
    std::uint64_t fingerprint_ = 0;

    /// Opens the test image and waits until the window is idle (analysis, then first plan).
    void open_idle(MainWindow& window) {
        window.show();
        window.open_image(QString::fromStdString(image_path_.string()));
        QTRY_VERIFY_WITH_TIMEOUT(window.plan() != nullptr && !window.busy(), kTimeoutMs);
        QVERIFY(window.compact_action()->isEnabled());
    }

    /// Runs `request` through the window and waits for its end, which must be a success.
    void compact(MainWindow& window, const CompactRequest& request) {
        QString refusal;
        QVERIFY2(window.compact_to_copy(request, &refusal), qPrintable(refusal));
        QVERIFY(window.compacting());
        // One new disk at a time, and nothing else while it is written.
        QVERIFY(!window.compact_action()->isEnabled());
        QVERIFY(!window.apply_action()->isEnabled());
        QTRY_VERIFY_WITH_TIMEOUT(!window.compacting(), kTimeoutMs);
        const CompactProgressDialog& dialog = *window.compact_progress();
        QVERIFY2(dialog.state() == CompactProgressDialog::State::Succeeded, qPrintable(dialog.message()));
        QVERIFY(window.compact_action()->isEnabled());
    }

    /// What holds for any compaction's output: the figures the dialog shows are the
    /// result's, and those are the files' own (stat of the input and of the output, the
    /// output analysed by the core).
    void check_output(const CompactProgressDialog& dialog, const fs::path& output) {
        QVERIFY(dialog.result().has_value());
        const CompactResult& r = *dialog.result();
        QVERIFY(fs::is_regular_file(output));
        QCOMPARE(QString::fromStdString(r.output), QString::fromStdString(output.string()));
        // Host bytes before → after: st_blocks · 512 of the input (one raw file) and of the output.
        QCOMPARE(r.host_bytes_input, host_bytes(image_path_));
        QCOMPARE(r.host_bytes_output, host_bytes(output));
        QVERIFY(r.host_bytes_output > 0);
        QVERIFY(r.host_bytes_output < r.host_bytes_input);  // 30 % of the files were deleted
        QCOMPARE(dialog.outcome("Host bytes"),
                 QStringLiteral("%1 before → %2 after")
                     .arg(bytes_text(host_bytes(image_path_)), bytes_text(host_bytes(output))));
        QCOMPARE(r.output_file_bytes, static_cast<std::uint64_t>(fs::file_size(output)));
        // Sparsifying and packing leave fewer granules in use, never more.
        QVERIFY(r.granules_output > 0);
        QVERIFY(r.granules_output <= r.granules_sparsified);
        QVERIFY(r.granules_sparsified <= r.granules_input);
        QVERIFY(r.granules_packed <= r.granules_sparsified);
        // The input's granules are those its file stores any byte of.
        QCOMPARE(r.granules_input, granules_stored(image_path_, r.granule));
        QCOMPARE(dialog.outcome("Granules in use"),
                 QStringLiteral("%1 input → %2 sparsified → %3 packed → %4 output")
                     .arg(r.granules_input)
                     .arg(r.granules_sparsified)
                     .arg(r.granules_packed)
                     .arg(r.granules_output));
        QCOMPARE(dialog.outcome("Granule"), bytes_text(r.granule));

        // The output, analysed by the core on its own, has the fragments the proof found.
        const auto out = open_image(output.string());
        QCOMPARE(out->layers().size(), std::size_t{1});  // it stands alone
        const ImageAnalysis after = analyze_image(*out);
        QCOMPARE(after.volumes.size(), r.volumes.size());
        QCOMPARE(r.volumes.size(), std::size_t{1});
        const CompactVolume& v = r.volumes.front();
        QVERIFY(v.verification.has_value());
        QCOMPARE(after.volumes.front().map.partition, v.partition);
        QCOMPARE(total_fragments(after.volumes.front().map), v.verification->fragments_after);
        const QString partition = QStringLiteral("Partition %1: ").arg(v.partition);
        QCOMPARE(dialog.outcome(partition + "moves done"), QStringLiteral("%1 of %2 (%3 moved), %4 skipped")
                                                               .arg(v.moves.done.size())
                                                               .arg(v.plan.moves.size())
                                                               .arg(size_text(v.moves.bytes_copied))
                                                               .arg(v.moves.skipped.size()));
        QVERIFY(!v.moves.done.empty());  // the fragmented image has granules to empty
        QVERIFY(dialog.outcome(partition + "verification").startsWith(QStringLiteral("passed")));
        QVERIFY(dialog.message().endsWith(QStringLiteral("the output is verified.")));
        QVERIFY(dialog.open_button()->isVisibleTo(&dialog));
        QCOMPARE(test::file_fingerprint(image_path_), fingerprint_);  // the input is only read
    }

private slots:
    void initTestCase() {
        image_path_ = test::gui_test_image();
        fingerprint_ = test::file_fingerprint(image_path_);
    }

    void offeredForAnImageWithNtfsVolumes() {
        MainWindow window(false);
        QVERIFY(!window.compact_action()->isEnabled());
        test::WorkDir dir("gui_compact_none");
        CompactRequest request;
        request.output = (dir / "none.img").string();
        QString refusal;
        QVERIFY(!window.compact_to_copy(request, &refusal));
        QCOMPARE(refusal, QStringLiteral("There is no NTFS volume to compact: open an image that has one."));
        QVERIFY(window.compact_progress() == nullptr);
        open_idle(window);
    }

    void progressNamesTheSteps() {
        // 12 MiB into the 48 MiB disk in 3 s: 36 MiB more take 9 s.
        const CompactMeter::Snapshot copy{CompactStep::Copy, 3, 12 << 20, 48 << 20, 3.0};
        QCOMPARE(step_text(copy, 8), QStringLiteral("Step 3 of 8: copying the data NTFS uses"));
        QCOMPARE(step_detail_text(copy), QStringLiteral("at %1 of the %2 disk · about 9 s left")
                                             .arg(size_text(12 << 20), size_text(48 << 20)));
        const CompactMeter::Snapshot sparsify{CompactStep::Sparsify, 6, 1 << 20, 4 << 20, 0.2};
        QCOMPARE(step_text(sparsify, 8),
                 QStringLiteral("Step 6 of 8: sparsifying: leaving out free clusters and zero blocks"));
        QCOMPARE(step_detail_text(sparsify),
                 QStringLiteral("at %1 of the %2 disk").arg(size_text(1 << 20), size_text(4 << 20)));
        // qemu-img reports nothing while it converts.
        const CompactMeter::Snapshot convert{CompactStep::Convert, 9, 0, 0, 5.0};
        QCOMPARE(step_text(convert, 9),
                 QStringLiteral("Step 9 of 9: converting with qemu-img and checking the image"));
        QCOMPARE(step_detail_text(convert), QString());
        // The per-volume steps run once per NTFS volume: four more for each further volume.
        CompactOptions options;
        QCOMPARE(compact_step_count(options, 1), compact_steps(options).size());
        QCOMPARE(compact_step_count(options, 3), compact_steps(options).size() + 8);
        options.verify = false;
        options.format = CompactFormat::Vhdx;
        QCOMPARE(compact_step_count(options, 2), compact_steps(options).size() + 1);
    }

    void compactsRawAsTheFilesShow() {
        test::WorkDir dir("gui_compact_raw");
        const fs::path output = dir / "compacted.img";
        MainWindow window(false);
        open_idle(window);
        if (QTest::currentTestFailed()) return;
        CompactRequest request;
        request.output = output.string();
        compact(window, request);
        if (QTest::currentTestFailed()) return;
        const CompactProgressDialog& dialog = *window.compact_progress();
        check_output(dialog, output);
        if (QTest::currentTestFailed()) return;
        const CompactResult& r = *dialog.result();
        QCOMPARE(dialog.meter().steps_seen(), compact_steps(CompactOptions{}));
        QCOMPARE(r.granule, default_granule(CompactFormat::Raw));
        QCOMPARE(dialog.outcome("Format"), QStringLiteral("raw"));
        // Every value is read whole at the dialog's width: a value wider than its column
        // wraps onto a row of two lines or more (at 480 pixels, the output's path, "Host
        // bytes" and the verification do), rather than ending in an ellipsis.
        window.compact_progress()->resize(480, 480);
        int wide = 0;  // (once the resize has been laid out)
        QTRY_VERIFY_WITH_TIMEOUT(
            (wide = 0, test::cut_rows(*dialog.outcome_table(), 1, wide).isEmpty() && wide >= 2), kTimeoutMs);

        // A raw output is the whole virtual disk, sparse: what it stores is what lseek
        // reports as data, and the granules it uses are those holding a non-zero byte.
        QCOMPARE(fs::file_size(output), fs::file_size(image_path_));
        std::uint64_t data = 0;
        for (const auto& [start, end] : data_ranges(output)) data += end - start;
        QCOMPARE(r.data_bytes_output, data);
        QCOMPARE(r.granules_output, granules_nonzero(output, r.granule));
        QCOMPARE(r.granules_output, granules_stored(output, r.granule));
        // None of the data stored lies in a cluster NTFS calls free.
        const auto out = open_image(output.string());
        const ByteSet free = free_bytes_on_disk(analyze_image(*out).volumes.front().map);
        ByteSet stored;
        for (const auto& [start, end] : data_ranges(output))
            stored += ByteSet::interval_type::right_open(start, end);
        QCOMPARE(boost::icl::length(free & stored), std::uint64_t{0});
        QVERIFY(boost::icl::length(free) > 0);
        // Nothing beside it: its temporary file became the output.
        QCOMPARE(entries(dir), std::vector<std::string>{"compacted.img"});
        qInfo(
            "granules of %llu: %llu input -> %llu sparsified -> %llu packed -> %llu output; host bytes %llu "
            "-> %llu",
            static_cast<unsigned long long>(r.granule), static_cast<unsigned long long>(r.granules_input),
            static_cast<unsigned long long>(r.granules_sparsified),
            static_cast<unsigned long long>(r.granules_packed),
            static_cast<unsigned long long>(r.granules_output),
            static_cast<unsigned long long>(r.host_bytes_input),
            static_cast<unsigned long long>(r.host_bytes_output));

        // "Open the output" opens it on its own, no parents.
        QSignalSpy planned(&window, &MainWindow::planFinished);
        dialog.open_button()->click();
        QTRY_COMPARE_WITH_TIMEOUT(planned.count(), 1, kTimeoutMs);
        QCOMPARE(QString::fromStdString(window.opened().analysis->path),
                 QString::fromStdString(output.string()));
        QCOMPARE(window.opened().analysis->layers.size(), std::size_t{1});
    }

    void dialogOffersEachFormatWithItsGranule() {
        test::WorkDir dir("gui_compact_dialog");
        const fs::path output = dir / "via-dialog.qcow2";
        MainWindow window(false);
        open_idle(window);
        if (QTest::currentTestFailed()) return;

        // The action's dialog: the default output is beside the image, new, named after it
        // with the format's suffix; the granule is the format's default and follows it.
        QString problem = QStringLiteral("the dialog did not open");
        QTimer driver;
        driver.setInterval(20);
        connect(&driver, &QTimer::timeout, this, [&] {
            auto* dialog = qobject_cast<CompactDialog*>(QApplication::activeModalWidget());
            if (dialog == nullptr) return;
            driver.stop();
            problem.clear();
            auto* path = dialog->findChild<QLineEdit*>(QStringLiteral("output"));
            auto* format = dialog->findChild<QComboBox*>(QStringLiteral("format"));
            auto* granule = dialog->findChild<QLineEdit*>(QStringLiteral("granule"));
            auto* pack = dialog->findChild<QCheckBox*>(QStringLiteral("pack"));
            auto* verify = dialog->findChild<QCheckBox*>(QStringLiteral("verify"));
            if (!path || !format || !granule || !pack || !verify) {
                problem = QStringLiteral("a field is missing");
                return dialog->reject();
            }
            if (!pack->isChecked() || !verify->isChecked())
                problem += QStringLiteral("pack or verify is off; ");
            const QFileInfo image(QString::fromStdString(image_path_.string()));
            const struct {
                const char* suffix;
                const char* granule;
            } expected[] = {{"img", "1MiB"}, {"qcow2", "64KiB"}, {"vmdk", "64KiB"}, {"vhdx", "1MiB"}};
            if (format->count() != 4) problem += QStringLiteral("not four formats; ");
            for (int i = 3; i >= 0; --i) {  // the first format's entry last: a change each time
                format->setCurrentIndex(i);
                const QFileInfo suggested(path->text());
                if (suggested.absolutePath() != image.absolutePath() || suggested.exists() ||
                    !suggested.fileName().startsWith(image.completeBaseName() + QStringLiteral(".compact")) ||
                    suggested.suffix() != QLatin1String(expected[i].suffix))
                    problem += QStringLiteral("format %1 suggests %2; ").arg(i).arg(path->text());
                if (granule->text() != QLatin1String(expected[i].granule))
                    problem += QStringLiteral("format %1 has granule %2; ").arg(i).arg(granule->text());
            }
            if (!problem.isEmpty()) return dialog->reject();
            format->setCurrentIndex(1);  // qcow2, at its 64 KiB clusters
            path->setText(QString::fromStdString(output.string()));
            dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->click();
        });
        driver.start();
        window.compact_action()->trigger();
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QVERIFY(window.compacting());
        QTRY_VERIFY_WITH_TIMEOUT(!window.compacting(), kTimeoutMs);
        const CompactProgressDialog& dialog = *window.compact_progress();
        QVERIFY2(dialog.state() == CompactProgressDialog::State::Succeeded, qPrintable(dialog.message()));
        check_output(dialog, output);
        if (QTest::currentTestFailed()) return;
        const CompactResult& r = *dialog.result();
        QCOMPARE(r.format, CompactFormat::Qcow2);
        QCOMPARE(r.granule, std::uint64_t{64 << 10});
        QCOMPARE(file_contents(output).substr(0, 4), std::string("QFI\xfb"));
        CompactOptions qcow2;
        qcow2.format = CompactFormat::Qcow2;
        QCOMPARE(dialog.meter().steps_seen(), compact_steps(qcow2));
        QCOMPARE(entries(dir), std::vector<std::string>{"via-dialog.qcow2"});
    }

    void refusesAnExistingOutputTheInputAndABadGranule() {
        test::WorkDir dir("gui_compact_refused");
        const fs::path output = dir / "taken.img";
        { std::ofstream(output) << "keep me"; }
        MainWindow window(false);
        open_idle(window);
        if (QTest::currentTestFailed()) return;

        // An existing file is refused, never replaced; nothing starts.
        CompactRequest request;
        request.output = output.string();
        QString refusal;
        QVERIFY(!window.compact_to_copy(request, &refusal));
        QCOMPARE(refusal, QStringLiteral("%1 exists; a compaction never replaces a file.")
                              .arg(QString::fromStdString(output.string())));
        QVERIFY(!window.compacting());
        QVERIFY(window.compact_progress() == nullptr);
        QCOMPARE(file_contents(output), std::string("keep me"));
        QCOMPARE(entries(dir), std::vector<std::string>{"taken.img"});

        // The input itself is refused before anything runs.
        request.output = image_path_.string();
        QVERIFY(!window.compact_to_copy(request, &refusal));
        QVERIFY2(refusal.contains(QStringLiteral("is the input image")), qPrintable(refusal));

        // A granule the format cannot allocate in: the core's own reason.
        request.output = (dir / "fresh.vmdk").string();
        request.format = CompactFormat::Vmdk;
        request.granule = kMiB;
        QVERIFY(!window.compact_to_copy(request, &refusal));
        QCOMPARE(refusal, granule_refusal(CompactFormat::Vmdk, kMiB));
        QVERIFY(refusal.contains(QStringLiteral("64 KiB")));
        request.format = CompactFormat::Raw;
        request.granule = 3000;
        QVERIFY(!window.compact_to_copy(request, &refusal));
        QCOMPARE(refusal, granule_refusal(CompactFormat::Raw, 3000));
        QVERIFY(window.compact_progress() == nullptr);
        QCOMPARE(entries(dir), std::vector<std::string>{"taken.img"});
        QCOMPARE(test::file_fingerprint(image_path_), fingerprint_);
    }

    void cancelLeavesNoOutputAndNoTemporaryFile() {
        test::WorkDir dir("gui_compact_cancel");
        const fs::path output = dir / "cancelled.img";
        MainWindow window(false);
        open_idle(window);
        if (QTest::currentTestFailed()) return;
        CompactRequest request;
        request.output = output.string();
        request.rate = 1 << 20;  // 1 MiB/s: the copy of the used data takes far longer than a cancel
        QVERIFY(window.compact_to_copy(request));
        CompactProgressDialog& dialog = *window.compact_progress();
        QTRY_VERIFY_WITH_TIMEOUT(dialog.meter().snapshot().step == CompactStep::Copy, kTimeoutMs);
        QVERIFY(dialog.isVisible());
        QTest::mouseClick(dialog.cancel_button(), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(!window.compacting(), kTimeoutMs);
        QVERIFY2(dialog.state() == CompactProgressDialog::State::Cancelled, qPrintable(dialog.message()));
        QCOMPARE(dialog.message(), QStringLiteral("Cancelled: no output was written."));
        QCOMPARE(dialog.meter().steps_seen(),
                 (std::vector{CompactStep::Analyse, CompactStep::Plan, CompactStep::Copy}));
        QVERIFY(!dialog.result().has_value());
        QVERIFY(!dialog.open_button()->isVisibleTo(&dialog));
        QVERIFY(!fs::exists(output));
        QCOMPARE(entries(dir), std::vector<std::string>{});  // the temporary raw disk is gone too
        QCOMPARE(test::file_fingerprint(image_path_), fingerprint_);
        QVERIFY(window.compact_action()->isEnabled());
    }
};

QTEST_MAIN(GuiCompactTest)
#include "gui_compact_test.moc"
