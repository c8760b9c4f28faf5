// SPDX-License-Identifier: GPL-2.0-or-later
// File ▸ Apply plan to a copy driven headless (offscreen platform): the plan the window shows
// is carried out on a generated image through the pipeline's apply_to_copy, and what the
// dialog reports is checked against the CLI's `apply --json` of the same plan, the core's
// own figures and the files on disk.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QLineEdit>
#include <QPushButton>
#include <QStandardItemModel>
#include <QTimer>
#include <QtTest>

#include <nlohmann/json.hpp>

#include "analyzers/analysis.hpp"
#include "app/gui/apply_dialog.hpp"
#include "app/gui/apply_progress_dialog.hpp"
#include "app/gui/files_model.hpp"
#include "app/gui/main_window.hpp"
#include "app/gui/plan_panel.hpp"
#include "core/apply/verify.hpp"
#include "core/image/open_image.hpp"
#include "core/plan/apply.hpp"
#include "core/plan/plan_io.hpp"
#include "gui_image.hpp"
#include "support/ntfs_edit.hpp"

using namespace guestfrag;
using namespace guestfrag::gui;
using test::file_contents;
using test::total_fragments;
namespace fs = std::filesystem;

namespace {

constexpr int kTimeoutMs = 120'000;

/// A path in the scratch directory of this test process.
fs::path scratch(const std::string& name) {
    return test::scratch_dir() /
           ("gui_apply_" + std::to_string(QCoreApplication::applicationPid()) + "_" + name);
}

/// Files apply left beside `output` under a temporary name (".NAME.XXXXXX").
int leftovers(const fs::path& output) {
    int n = 0;
    const std::string prefix = "." + output.filename().string() + ".";
    for (const auto& entry : fs::directory_iterator(output.parent_path()))
        if (entry.path().filename().string().starts_with(prefix)) ++n;
    return n;
}

}  // namespace

class GuiApplyTest : public QObject {
    Q_OBJECT

    fs::path image_path_;
    std::unique_ptr<DiskImage> image_;
    ImageAnalysis analysis_;
    std::uint64_t fingerprint_ = 0;

    /// Opens `path` (the test image by default) with a defrag plan and waits for the plan,
    /// which must have moves.
    void open_planned(MainWindow& window, const fs::path& path = {}) {
        window.set_strategy("defrag");
        window.show();
        window.open_image(QString::fromStdString((path.empty() ? image_path_ : path).string()));
        QTRY_VERIFY_WITH_TIMEOUT(window.plan() != nullptr, kTimeoutMs);
        QVERIFY(!window.plan()->plan.moves.empty());
    }

    /// What the dialog shows of `r` is r itself.
    static void check_shown(const ApplyProgressDialog& dialog, const ApplyResult& r) {
        QCOMPARE(dialog.outcome("Moves done"),
                 QStringLiteral("%1 of %2").arg(r.moves.done.size()).arg(r.plan.moves.size()));
        QCOMPARE(dialog.outcome("Moves skipped"), QString::number(r.moves.skipped.size()));
        const QString written = r.format == ApplyOutputFormat::Qcow2
                                    ? QStringLiteral("Changed clusters written")
                                    : QStringLiteral("Disk data written");
        QCOMPARE(
            dialog.outcome("Data moved"),
            QStringLiteral("%1 (%2 bytes)").arg(size_text(r.moves.bytes_copied)).arg(r.moves.bytes_copied));
        QCOMPARE(
            dialog.outcome(written),
            QStringLiteral("%1 (%2 bytes)").arg(size_text(r.disk_bytes_written)).arg(r.disk_bytes_written));
        QCOMPARE(
            dialog.outcome("Output file size"),
            QStringLiteral("%1 (%2 bytes)").arg(size_text(r.output_file_bytes)).arg(r.output_file_bytes));
        QCOMPARE(dialog.outcome("Time"), QStringLiteral("%1 s").arg(r.seconds, 0, 'f', 1));
        QVERIFY(r.verification.has_value());
        const ApplyVerification& v = *r.verification;
        QCOMPARE(dialog.outcome("Streams hashed"), QString::number(v.streams_hashed));
        QCOMPARE(dialog.outcome("Fragments"), QStringLiteral("%1 before → %2 predicted → %3 after")
                                                  .arg(v.fragments_before)
                                                  .arg(v.fragments_predicted)
                                                  .arg(v.fragments_after));
        QVERIFY(dialog.outcome("Verification").startsWith(QStringLiteral("passed")));
    }

    /// The verification's figures are the core's: fragments of the input's map, of
    /// apply_plan's after-state of the moves done and of the output's own analysis; the
    /// streams hashed are the input's non-resident streams but those that record the moves.
    void check_against_core(const ApplyResult& r, const fs::path& output, const OpenOptions& open) {
        const VolumeMap& before = analysis_.volumes.front().map;
        const ApplyVerification& v = *r.verification;
        QCOMPARE(v.fragments_before, total_fragments(before));
        Plan done = r.plan;
        done.moves.clear();
        for (const std::size_t i : r.moves.done) done.moves.push_back(r.plan.moves[i]);
        QCOMPARE(v.fragments_predicted, total_fragments(apply_plan(before, done)));
        const auto out = open_image(output.string(), open);
        const ImageAnalysis after = analyze_image(*out);
        QCOMPARE(v.fragments_after, total_fragments(after.volumes.front().map));
        QVERIFY(v.fragments_after < v.fragments_before);
        // Hashed: every stream but those that record the moves ($MFT and its $BITMAP,
        // $MFTMirr, $Bitmap, the attribute lists of the files moved).
        const auto digests = stream_digests(*image_, before);
        QCOMPARE(digests.size(), before.streams.size());
        std::size_t recording = 0;
        for (const Stream& s : before.streams) {
            const bool moved = std::any_of(done.moves.begin(), done.moves.end(),
                                           [&](const Move& m) { return m.mft_record == s.mft_record; });
            const std::pair<std::uint64_t, std::string> key{s.mft_record, s.label()};
            recording += key == std::pair<std::uint64_t, std::string>{0, "$DATA"} ||
                                 key == std::pair<std::uint64_t, std::string>{0, "$BITMAP"} ||
                                 key == std::pair<std::uint64_t, std::string>{1, "$DATA"} ||
                                 key == std::pair<std::uint64_t, std::string>{6, "$DATA"} ||
                                 (moved && key.second == "$ATTRIBUTE_LIST")
                             ? 1
                             : 0;
        }
        QCOMPARE(v.streams_hashed, static_cast<std::uint64_t>(digests.size() - recording));
        QCOMPARE(test::file_fingerprint(image_path_), fingerprint_);  // the input is only read
    }

private slots:
    void initTestCase() {
        image_path_ = test::gui_test_image();
        image_ = open_image(image_path_.string());
        analysis_ = analyze_image(*image_);
        fingerprint_ = test::file_fingerprint(image_path_);
    }

    void offeredOnlyForAPlanWithMoves() {
        MainWindow window(false);
        QVERIFY(!window.apply_action()->isEnabled());
        QVERIFY(!window.plan_panel()->apply_button()->isEnabled());
        ApplyRequest request;
        request.output = scratch("none.img").string();
        QString refusal;
        QVERIFY(!window.apply_to_copy(request, &refusal));
        QCOMPARE(refusal, QStringLiteral("There is no plan with moves to apply."));
        open_planned(window);
        QVERIFY(window.apply_action()->isEnabled());
        QVERIFY(window.plan_panel()->apply_button()->isEnabled());
    }

    void defaultOutputIsBesideTheImageAndNew() {
        const fs::path input = scratch("disk.vmdk");
        const QString path = QString::fromStdString(input.string());
        const QString dir = QString::fromStdString(input.parent_path().string());
        const QString stem = QString::fromStdString(input.stem().string());
        const QString raw = default_apply_output(path, ApplyOutputFormat::Raw);
        QCOMPARE(raw, QStringLiteral("%1/%2.defrag.img").arg(dir, stem));
        QCOMPARE(default_apply_output(path, ApplyOutputFormat::Qcow2),
                 QStringLiteral("%1/%2.defrag.qcow2").arg(dir, stem));
        // A file of that name exists: the next free name, never that file.
        { std::ofstream(raw.toStdString()) << "taken"; }
        QCOMPARE(default_apply_output(path, ApplyOutputFormat::Raw),
                 QStringLiteral("%1/%2.defrag-2.img").arg(dir, stem));
        fs::remove(raw.toStdString());
    }

    void progressShowsTheStepBytesAndTimeLeft() {
        // 12 MiB into the 48 MiB disk in 3 s: 36 MiB more take 9 s. No rate: holes are not read.
        const ApplyMeter::Snapshot copy{ApplyStep::Copy, 2, 12 << 20, 48 << 20, 3.0};
        QCOMPARE(apply_step_text(copy, 6), QStringLiteral("Step 2 of 6: copying the disk"));
        QCOMPARE(apply_detail_text(copy), QStringLiteral("at %1 of the %2 disk · about 9 s left")
                                              .arg(size_text(12 << 20), size_text(48 << 20)));
        QCOMPARE(apply_copied_text(5 << 20, 0),
                 QStringLiteral("Data copied so far: %1").arg(size_text(5 << 20)));
        QCOMPARE(apply_copied_text(5 << 20, 1 << 20),
                 QStringLiteral("Data copied so far: %1 (limited to %2/s)")
                     .arg(size_text(5 << 20), size_text(1 << 20)));
        // 5 of 20 moves in 2 s: 15 more take 6 s.
        ApplyMeter::Snapshot moves{ApplyStep::Move, 3, 5, 20, 2.0};
        QCOMPARE(apply_detail_text(moves), QStringLiteral("5 of 20 moves · about 6 s left"));
        // 100 of 1000 streams in 20 s: 900 more take 180 s.
        ApplyMeter::Snapshot hashing{ApplyStep::HashOutput, 6, 100, 1000, 20.0};
        QCOMPARE(apply_detail_text(hashing), QStringLiteral("100 of 1000 streams · about 3 min 0 s left"));
        // No estimate in a step's first second.
        moves.seconds = 0.5;
        QCOMPARE(apply_detail_text(moves), QStringLiteral("5 of 20 moves"));
        QCOMPARE(apply_step_text({}, 6), QStringLiteral("Starting…"));
    }

    void skippedMovesAreCountedByReason() {
        // A hand-made outcome (the generated image has no stream apply must skip): three
        // of five moves skipped for two reasons, no verification.
        ApplyResult r;
        r.output = "/nowhere/out.img";
        r.plan.moves.resize(5);
        r.moves.done = {0, 3};
        r.moves.skipped = {{1, "the stream is encrypted"},
                           {2, "the mapping pairs would not fit"},
                           {4, "the stream is encrypted"}};
        r.moves.bytes_copied = 3 << 12;
        ApplyProgressDialog dialog(std::make_shared<ApplyMeter>(), std::make_shared<RateLimiter>(0), 3,
                                   QString::fromStdString(r.output));
        dialog.show_result(r);
        QVERIFY(dialog.state() == ApplyProgressDialog::State::Succeeded);
        QCOMPARE(dialog.outcome("Moves done"), QStringLiteral("2 of 5"));
        QCOMPARE(dialog.outcome("Moves skipped"), QStringLiteral("3"));
        QCOMPARE(dialog.outcome("Skipped: the stream is encrypted"), QStringLiteral("2"));
        QCOMPARE(dialog.outcome("Skipped: the mapping pairs would not fit"), QStringLiteral("1"));
        QCOMPARE(dialog.outcome("Verification"), QStringLiteral("not verified (turned off)"));
        QCOMPARE(dialog.outcome("Fragments"), QString());
        QCOMPARE(dialog.message(), QStringLiteral("Applied 2 of 5 moves (not verified)."));

        // A failure shows its one line.
        ApplyProgressDialog failed(std::make_shared<ApplyMeter>(), std::make_shared<RateLimiter>(0), 6,
                                   QStringLiteral("out.img"));
        failed.show_error(
            Error(ErrorKind::Corrupt, "verification failed: the contents of record 70 $DATA differ"));
        QVERIFY(failed.state() == ApplyProgressDialog::State::Failed);
        QCOMPARE(failed.message(),
                 QStringLiteral("Failed: verification failed: the contents of record 70 $DATA differ "
                                "(no output was written)"));
        QVERIFY(!failed.open_button()->isVisibleTo(&failed));
        QVERIFY(dialog.open_button()->isVisibleTo(&dialog));
    }

    void appliesThroughTheActionAsTheCliDoes() {
        MainWindow window(false);
        open_planned(window);
        const fs::path output = scratch("raw.img");
        fs::remove(output);

        // The action's dialog: the default output is beside the image and not the image; a
        // raw input can back a qcow2 overlay, so both formats are offered.
        bool dialog_seen = false;
        QTimer driver;
        driver.setInterval(20);
        connect(&driver, &QTimer::timeout, this, [&] {
            auto* dialog = qobject_cast<ApplyDialog*>(QApplication::activeModalWidget());
            if (dialog == nullptr) return;
            driver.stop();
            dialog_seen = true;
            auto* path = dialog->findChild<QLineEdit*>(QStringLiteral("output"));
            auto* format = dialog->findChild<QComboBox*>(QStringLiteral("format"));
            if (path == nullptr || format == nullptr) return dialog->reject();
            const QString suggested = path->text();
            if (QFileInfo(suggested).absolutePath() !=
                    QFileInfo(QString::fromStdString(image_path_.string())).absolutePath() ||
                QFileInfo(suggested).fileName() == QString::fromStdString(image_path_.filename().string()) ||
                !qobject_cast<QStandardItemModel*>(format->model())->item(1)->isEnabled())
                return dialog->reject();
            path->setText(QString::fromStdString(output.string()));
            dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->click();
        });
        driver.start();
        window.apply_action()->trigger();
        QVERIFY(dialog_seen);
        QVERIFY2(window.applying(), "the dialog's checks of the default output or the formats failed");
        QVERIFY(!window.apply_action()->isEnabled());
        QVERIFY(!window.plan_panel()->apply_button()->isEnabled());
        QTRY_VERIFY_WITH_TIMEOUT(!window.applying(), kTimeoutMs);
        const ApplyProgressDialog& dialog = *window.apply_progress();
        QVERIFY2(dialog.state() == ApplyProgressDialog::State::Succeeded, qPrintable(dialog.message()));
        QVERIFY(window.apply_action()->isEnabled());
        const ApplyResult& r = *dialog.result();
        check_shown(dialog, r);
        if (QTest::currentTestFailed()) return;
        QCOMPARE(r.plan.moves, window.plan()->plan.moves);
        QCOMPARE(dialog.meter().steps_seen(), apply_steps(ApplyOptions{}));

        // The file: complete, the disk's size, under the name asked for, nothing else left.
        QVERIFY(fs::exists(output));
        QCOMPARE(fs::file_size(output), image_->size());
        QCOMPARE(r.output_file_bytes, image_->size());
        QCOMPARE(leftovers(output), 0);
        check_against_core(r, output, {});
        if (QTest::currentTestFailed()) return;
        qInfo(
            "applied %zu of %zu moves, %llu bytes moved, %llu written; %llu streams hashed; fragments %llu "
            "-> %llu",
            r.moves.done.size(), r.plan.moves.size(), static_cast<unsigned long long>(r.moves.bytes_copied),
            static_cast<unsigned long long>(r.disk_bytes_written),
            static_cast<unsigned long long>(r.verification->streams_hashed),
            static_cast<unsigned long long>(r.verification->fragments_before),
            static_cast<unsigned long long>(r.verification->fragments_after));

        // The CLI's apply of the same plan reports the same and writes the same bytes.
        const fs::path plan_json = scratch("plan.json");
        { std::ofstream(plan_json) << plan_to_json(window.plan()->plan, analysis_.volumes.front().map); }
        const fs::path cli_output = scratch("cli.img");
        fs::remove(cli_output);
        const auto cli = test::run_cli({"apply", image_path_.string(), "--plan", plan_json.string(), "-o",
                                        cli_output.string(), "--json"});
        QVERIFY2(cli.status == 0, cli.err.c_str());
        const auto doc = nlohmann::json::parse(cli.out);
        QCOMPARE(doc["moves"]["done"].get<std::size_t>(), r.moves.done.size());
        QCOMPARE(doc["moves"]["skipped"].get<std::size_t>(), r.moves.skipped.size());
        QCOMPARE(doc["bytes_written"]["moved"].get<std::uint64_t>(), r.moves.bytes_copied);
        QCOMPARE(doc["bytes_written"]["disk"].get<std::uint64_t>(), r.disk_bytes_written);
        QCOMPARE(doc["bytes_written"]["file"].get<std::uint64_t>(), r.output_file_bytes);
        QCOMPARE(doc["verification"]["streams_hashed"].get<std::uint64_t>(), r.verification->streams_hashed);
        QCOMPARE(doc["verification"]["fragments_after"].get<std::uint64_t>(),
                 r.verification->fragments_after);
        QCOMPARE(test::file_fingerprint(cli_output), test::file_fingerprint(output));
        fs::remove(cli_output);
        fs::remove(plan_json);

        // "Open the result" opens the copy, whose analysis shows the fragments after.
        QSignalSpy planned(&window, &MainWindow::planFinished);
        dialog.open_button()->click();
        QTRY_COMPARE_WITH_TIMEOUT(planned.count(), 1, kTimeoutMs);
        QCOMPARE(QString::fromStdString(window.opened().analysis->path),
                 QString::fromStdString(output.string()));
        QCOMPARE(total_fragments(window.opened().analysis->volumes.front().map),
                 r.verification->fragments_after);
        fs::remove(output);
    }

    void qcow2OverlayReplacesAFileOnlyWhenAsked() {
        MainWindow window(false);
        open_planned(window);
        const fs::path output = scratch("overlay.qcow2");
        { std::ofstream(output) << "keep me"; }
        ApplyRequest request;
        request.output = output.string();
        request.format = ApplyOutputFormat::Qcow2;
        QString refusal;
        QVERIFY(!window.apply_to_copy(request, &refusal));
        QVERIFY2(refusal.contains(QStringLiteral("exists")), qPrintable(refusal));
        QVERIFY(!window.applying());
        QCOMPARE(file_contents(output), std::string("keep me"));

        // The input itself is refused before anything runs.
        ApplyRequest input = request;
        input.output = image_path_.string();
        input.replace_existing = true;
        QVERIFY(!window.apply_to_copy(input, &refusal));
        QVERIFY2(refusal.contains(QStringLiteral("is the input image")), qPrintable(refusal));

        request.replace_existing = true;
        QVERIFY(window.apply_to_copy(request, &refusal));
        QTRY_VERIFY_WITH_TIMEOUT(!window.applying(), kTimeoutMs);
        const ApplyProgressDialog& dialog = *window.apply_progress();
        QVERIFY2(dialog.state() == ApplyProgressDialog::State::Succeeded, qPrintable(dialog.message()));
        const ApplyResult& r = *dialog.result();
        check_shown(dialog, r);
        if (QTest::currentTestFailed()) return;
        QCOMPARE(dialog.outcome("Format"), QStringLiteral("qcow2 overlay backed by the input"));
        ApplyOptions overlay;
        overlay.format = ApplyOutputFormat::Qcow2;
        QCOMPARE(dialog.meter().steps_seen(), apply_steps(overlay));
        QCOMPARE(file_contents(output).substr(0, 4), std::string("QFI\xfb"));
        QCOMPARE(fs::file_size(output), r.output_file_bytes);
        QVERIFY(r.output_file_bytes < image_->size());
        check_against_core(r, output, {});
        if (QTest::currentTestFailed()) return;

        // Opened, the overlay is a two-layer chain over the input.
        QSignalSpy planned(&window, &MainWindow::planFinished);
        dialog.open_button()->click();
        QTRY_COMPARE_WITH_TIMEOUT(planned.count(), 1, kTimeoutMs);
        QCOMPARE(window.opened().analysis->layers.size(), std::size_t{2});
        QCOMPARE(total_fragments(window.opened().analysis->volumes.front().map),
                 r.verification->fragments_after);
        fs::remove(output);
    }

    void cancelLeavesNoOutput() {
        MainWindow window(false);
        open_planned(window);
        const fs::path output = scratch("cancelled.img");
        fs::remove(output);
        ApplyRequest request;
        request.output = output.string();
        request.rate = 1 << 20;  // 1 MiB/s: the copy of the disk's data takes far longer than a cancel
        QVERIFY(window.apply_to_copy(request));
        ApplyProgressDialog& dialog = *window.apply_progress();
        QTRY_VERIFY_WITH_TIMEOUT(dialog.meter().snapshot().step == ApplyStep::Copy, kTimeoutMs);
        QVERIFY(dialog.isVisible());
        QTest::mouseClick(dialog.cancel_button(), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(!window.applying(), kTimeoutMs);
        QVERIFY2(dialog.state() == ApplyProgressDialog::State::Cancelled, qPrintable(dialog.message()));
        QCOMPARE(dialog.message(), QStringLiteral("Cancelled: no output was written."));
        QCOMPARE(dialog.meter().steps_seen(), (std::vector{ApplyStep::Analyse, ApplyStep::Copy}));
        QVERIFY(!fs::exists(output));
        QCOMPARE(leftovers(output), 0);
        QCOMPARE(test::file_fingerprint(image_path_), fingerprint_);
        QVERIFY(window.apply_action()->isEnabled());
    }

    void refusalShowsTheCoresOneLine() {
        // A volume whose $LogFile says it was not shut down cleanly: analysed and planned,
        // but apply refuses it before writing anything.
        MkImageOptions options;
        options.disk_size = 32ull << 20;
        options.table = "none";
        options.files = 300;
        options.seed = 31;
        const fs::path input = scratch("unclean.img");
        fs::copy_file(test::generated_image("gui_bare", options), input,
                      fs::copy_options::overwrite_existing);
        test::mark_logfile_unclean(input);
        const std::uint64_t fingerprint = test::file_fingerprint(input);
        MainWindow window(false);
        open_planned(window, input);
        if (QTest::currentTestFailed()) return;

        // The core's own refusal of this plan.
        ApplyOptions core;
        core.output = scratch("core_refused.img").string();
        QString expected;
        try {
            (void)guestfrag::apply_to_copy(input.string(), {}, window.plan()->plan, core);
        } catch (const Error& e) {
            expected = QString::fromStdString(e.what());
        }
        QVERIFY2(expected.contains(QStringLiteral("$LogFile")), qPrintable(expected));

        const fs::path output = scratch("refused.img");
        ApplyRequest request;
        request.output = output.string();
        QVERIFY(window.apply_to_copy(request));
        QTRY_VERIFY_WITH_TIMEOUT(!window.applying(), kTimeoutMs);
        const ApplyProgressDialog& dialog = *window.apply_progress();
        QVERIFY(dialog.state() == ApplyProgressDialog::State::Failed);
        QCOMPARE(dialog.message(), QStringLiteral("Failed: %1 (no output was written)").arg(expected));
        QVERIFY(!dialog.open_button()->isVisibleTo(&dialog));
        QVERIFY(!fs::exists(output));
        QCOMPARE(leftovers(output), 0);
        QCOMPARE(test::file_fingerprint(input), fingerprint);
        fs::remove(input);
    }

    void closingTheWindowCancelsTheApply() {
        const fs::path output = scratch("closed.img");
        fs::remove(output);
        {
            MainWindow window(false);
            open_planned(window);
            ApplyRequest request;
            request.output = output.string();
            request.rate = 1 << 20;
            QVERIFY(window.apply_to_copy(request));
            QTRY_VERIFY_WITH_TIMEOUT(window.apply_progress()->meter().snapshot().step == ApplyStep::Copy,
                                     kTimeoutMs);
        }  // the window's jobs cancel their work and wait for it
        QVERIFY(!fs::exists(output));
        QCOMPARE(leftovers(output), 0);
    }
};

QTEST_MAIN(GuiApplyTest)
#include "gui_apply_test.moc"
