// SPDX-License-Identifier: GPL-2.0-or-later
// The storage model (Settings ▸ Storage model, --device-model): what it sets reaches the
// plan's estimate and impact as docs/estimate.md's formulas say, and an interactive window
// remembers it (QSettings, in a temporary directory: never the user's own settings).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include <QApplication>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include "app/gui/histogram_panel.hpp"
#include "app/gui/main_window.hpp"
#include "app/gui/plan_panel.hpp"
#include "app/gui/provisioned_model.hpp"
#include "app/gui/storage_dialog.hpp"
#include "gui_image.hpp"

using namespace guestfrag;
using namespace guestfrag::gui;
namespace fs = std::filesystem;

namespace {

constexpr int kTimeoutMs = 120'000;
// Not a power of two: no format records it, so the estimate can only have it from the dialog.
constexpr std::uint64_t kZeroBlock = 192 << 10;

/// A device model file in the scratch directory holding `json`.
std::string model_file(const std::string& name, const std::string& json) {
    const fs::path path = test::scratch_dir() /
                          ("gui_storage_" + std::to_string(QCoreApplication::applicationPid()) + "_" + name);
    std::ofstream(path) << json;
    return path.string();
}

/// The dialog's fields as a user sees them; provisioning is the chosen item's type ("" as
/// detected).
struct Fields {
    QString provisioning;
    QString zero_block;
    QString preset = QStringLiteral("default");
    QString device_model;
};

template <typename Widget>
Widget& field(StorageDialog& dialog, const char* name) {
    auto* widget = dialog.findChild<Widget*>(QString::fromLatin1(name));
    if (widget == nullptr) qFatal("the storage dialog has no %s", name);
    return *widget;
}

Fields fields_of(StorageDialog& dialog) {
    return {field<QComboBox>(dialog, "provisioning").currentData().toString(),
            field<QLineEdit>(dialog, "zeroBlock").text(), field<QComboBox>(dialog, "preset").currentText(),
            field<QLineEdit>(dialog, "deviceModel").text()};
}

/// Fills the dialog's fields and presses OK. Returns what the dialog refused with (it then
/// stays open and is cancelled here), empty when it accepted.
QString submit(StorageDialog& dialog, const Fields& fields) {
    auto& provisioning = field<QComboBox>(dialog, "provisioning");
    provisioning.setCurrentIndex(fields.provisioning.isEmpty() ? 0
                                                               : provisioning.findData(fields.provisioning));
    field<QLineEdit>(dialog, "zeroBlock").setText(fields.zero_block);
    field<QComboBox>(dialog, "preset").setCurrentText(fields.preset);
    field<QLineEdit>(dialog, "deviceModel").setText(fields.device_model);
    dialog.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->click();
    if (!dialog.isVisible()) return {};
    const QString refusal = field<QLabel>(dialog, "error").text();
    dialog.reject();
    return refusal;
}

/// Triggers Settings ▸ Storage model on `window` and hands its dialog to `use`, which must
/// close it. Returns whether the dialog was shown.
bool with_storage_dialog(MainWindow& window, const std::function<void(StorageDialog&)>& use) {
    bool shown = false;
    QTimer driver;
    driver.setInterval(20);
    QObject::connect(&driver, &QTimer::timeout, [&] {
        auto* dialog = qobject_cast<StorageDialog*>(QApplication::activeModalWidget());
        if (dialog == nullptr) return;
        driver.stop();
        shown = true;
        use(*dialog);
    });
    driver.start();
    window.storage_action()->trigger();
    return shown;
}

/// The dialog's refusal of `fields` (empty: accepted), or a note that it did not show.
QString set_in_dialog(MainWindow& window, const Fields& fields) {
    QString refusal = QStringLiteral("the dialog did not show");
    with_storage_dialog(window, [&](StorageDialog& dialog) { refusal = submit(dialog, fields); });
    return refusal;
}

bool close_to(double value, double expected) {
    return std::abs(value - expected) <= 1e-9 * std::abs(expected);
}

}  // namespace

class GuiStorageTest : public QObject {
    Q_OBJECT

    fs::path image_path_;
    QTemporaryDir settings_dir_;

private slots:
    void initTestCase() {
        QVERIFY(settings_dir_.isValid());
        QCoreApplication::setOrganizationName(QStringLiteral("guestfrag-test"));
        QCoreApplication::setApplicationName(QStringLiteral("gui_storage_test"));
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, settings_dir_.path());
        image_path_ = test::gui_test_image();
    }

    void deviceModelFileTimesTheEstimate() {
        // guestfrag-gui --device-model: the plan's estimate runs on the models the file gives.
        // A scan only reads; on the SSD model each read costs the latency plus its bytes at
        // the rate (docs/estimate.md §4).
        MainWindow window(false);
        const std::string file = model_file(
            "ssd.json", R"({"ssd": {"io_latency_seconds": 0.001, "transfer_bytes_per_second": 1e8}})");
        QString error;
        QVERIFY2(window.set_device_model(file, &error), qPrintable(error));
        QCOMPARE(window.storage().device_model, file);
        window.set_strategy("defrag");
        window.set_tab("histograms");  // the estimate is computed for its tab
        window.open_image(QString::fromStdString(image_path_.string()));
        QTRY_VERIFY_WITH_TIMEOUT(window.plan() != nullptr && window.plan()->estimate, kTimeoutMs);
        const IoStats& before = window.plan()->estimate->before.stats;
        QVERIFY(before.ios > 0);
        QCOMPARE(before.writes, std::uint64_t{0});
        QVERIFY(close_to(before.device_seconds.ssd,
                         static_cast<double>(before.ios) * 1e-3 + static_cast<double>(before.bytes) / 1e8));

        // A file that is not a device model changes nothing; the reason is one line naming it.
        const std::string bad = model_file("bad.json", R"({"ssd": {"io_latency": 0.001}})");
        QVERIFY(!window.set_device_model(bad, &error));
        QVERIFY2(error.startsWith(QString::fromStdString(bad + ": ssd.io_latency")) && !error.contains('\n'),
                 qPrintable(error));
        QCOMPARE(window.storage().device_model, file);
        for (const std::string& path : {file, bad}) fs::remove(path);
    }

    void storageModelTimesTheEstimate() {
        // A write workload pays first writes; the dialog's provisioning, zeroing block, preset
        // and device model file then decide what they and the IOs cost.
        MainWindow window(false);
        window.set_strategy("defrag");
        for (QLineEdit* edit : window.plan_panel()->findChildren<QLineEdit*>())
            if (edit->text() == QStringLiteral("scan")) edit->setText(QStringLiteral("write:300"));
        window.show();
        window.set_tab("histograms");  // each plan comes with its estimate (planFinished)
        window.open_image(QString::fromStdString(image_path_.string()));
        QTRY_VERIFY_WITH_TIMEOUT(window.plan() != nullptr && window.plan()->estimate, kTimeoutMs);
        const LayerProvisioning detected = window.opened().image->layers().front().provisioning;
        QCOMPARE(window.plan()->estimate->provisioning, detected);
        QVERIFY(detected.zero_block != kZeroBlock);
        const double default_array = window.plan()->estimate->before.stats.device_seconds.array;
        // Another type than the image's own, so that the estimate can only have it from the dialog.
        const Provisioning chosen =
            detected.type == Provisioning::Lazy ? Provisioning::Thin : Provisioning::Lazy;

        const std::string file = model_file("write.json", R"({"ssd": {
            "io_latency_seconds": 0.001, "transfer_bytes_per_second": 1e8,
            "write_latency_seconds": 0.002, "write_transfer_bytes_per_second": 5e7,
            "first_write": {"zero_bytes_per_second": 1e7, "allocate_seconds": 0.004}}})");
        QSignalSpy planned(&window, &MainWindow::planFinished);
        const QString refusal = set_in_dialog(
            window, {QString::fromStdString(std::string(provisioning_name(chosen))), QStringLiteral("192K"),
                     QStringLiteral("3par-format"), QString::fromStdString(file)});
        QVERIFY2(refusal.isEmpty(), qPrintable(refusal));
        QCOMPARE(window.storage(), (StorageSettings{chosen, kZeroBlock, "3par-format", file}));
        // Accepting planned the volume again, on the new storage.
        QTRY_COMPARE_WITH_TIMEOUT(planned.count(), 1, kTimeoutMs);
        const PlanResult& plan = *window.plan();
        QVERIFY(plan.estimate.has_value());
        QCOMPARE(plan.estimate->provisioning.type, chosen);
        QCOMPARE(plan.estimate->provisioning.zero_block, kZeroBlock);
        const IoStats& s = plan.estimate->before.stats;
        QCOMPARE(s.zero_block, kZeroBlock);
        QVERIFY(s.writes > 0);
        QVERIFY2(s.first_writes > 0, "the workload pays no first write");

        // §4: each SSD IO costs its direction's latency plus its bytes at that direction's rate.
        const double reads = static_cast<double>(s.ios - s.writes);
        const double writes = static_cast<double>(s.writes);
        const double read_bytes = static_cast<double>(s.bytes - s.written_bytes);
        const double written_bytes = static_cast<double>(s.written_bytes);
        const double ssd = reads * 0.001 + read_bytes / 1e8 + writes * 0.002 + written_bytes / 5e7;
        QVERIFY2(close_to(s.device_seconds.ssd, ssd), qPrintable(QString::number(s.device_seconds.ssd)));
        // §8.2: lazy adds the zeroing of each first-written block, thin also its allocation.
        const double zeroing = static_cast<double>(s.first_writes) * static_cast<double>(kZeroBlock) / 1e7;
        const double allocating = static_cast<double>(s.first_writes) * 0.004;
        for (const ProvisionedSeconds& p : s.provisioned) {
            const double extra = p.type == Provisioning::Eager  ? 0
                                 : p.type == Provisioning::Lazy ? zeroing
                                                                : zeroing + allocating;
            QVERIFY2(close_to(p.device_seconds.ssd, ssd + extra), provisioning_name(p.type).data());
        }
        // 3par-format: the array writes at the rate the published format reached (§8.3), the
        // same IOs otherwise; the default array writes at 1 GB/s.
        const double rate = format_calibrated_array().write_transfer_bytes_per_second;
        QVERIFY(close_to(s.device_seconds.array - default_array, written_bytes / rate - written_bytes / 1e9));

        // The tables mark the chosen type as this disk's; the plan's own IO counts its first
        // writes on the same storage.
        const ProvisionedModel& table = *window.histograms()->provisioned_model();
        for (int c = 0; c < table.columnCount(); ++c)
            QCOMPARE(table.column_title(c).contains(QStringLiteral("(this disk)")), table.type(c) == chosen);
        window.set_tab("impact");
        QTRY_VERIFY_WITH_TIMEOUT(plan.has(Figure::Impact) && !window.busy(), kTimeoutMs);
        QVERIFY2(plan.impact.has_value(), plan.impact_error.c_str());
        const PlanWrites& own = plan.impact->plan_writes;
        QCOMPARE(own.provisioning.type, chosen);
        QCOMPARE(own.provisioning.zero_block, kZeroBlock);
        QCOMPARE(own.provisioning.basis, std::string("set in Settings ▸ Storage model"));
        QCOMPARE(own.stats.zero_block, kZeroBlock);

        // Back to what the image records: the first plan's storage again.
        window.set_tab("histograms");
        QVERIFY(set_in_dialog(window, {}).isEmpty());
        QTRY_COMPARE_WITH_TIMEOUT(planned.count(), 2, kTimeoutMs);
        QCOMPARE(window.plan()->estimate->provisioning, detected);
        QCOMPARE(window.plan()->estimate->before.stats.device_seconds.array, default_array);
        fs::remove(file);
    }

    void storageModelIsRemembered() {
        const std::string file = model_file("kept.json", R"({"hdd": {"rpm": 5400}})");
        const StorageSettings chosen{Provisioning::Thin, 256 << 10, "3par-format", file};
        {
            // An interactive window starts from what is remembered (nothing yet) and remembers
            // what its dialog accepts.
            MainWindow first(true);
            QCOMPARE(first.storage(), StorageSettings{});
            const QString refusal =
                set_in_dialog(first, {QStringLiteral("thin"), QStringLiteral("256K"),
                                      QStringLiteral("3par-format"), QString::fromStdString(file)});
            QVERIFY2(refusal.isEmpty(), qPrintable(refusal));
            QCOMPARE(first.storage(), chosen);
        }
        {
            const QSettings settings;
            QCOMPARE(settings.value(QStringLiteral("storage/provisioning")).toString(),
                     QStringLiteral("thin"));
            QCOMPARE(settings.value(QStringLiteral("storage/zeroBlock")).toULongLong(), 256ull << 10);
            QCOMPARE(settings.value(QStringLiteral("storage/preset")).toString(),
                     QStringLiteral("3par-format"));
            QCOMPARE(settings.value(QStringLiteral("storage/deviceModel")).toString(),
                     QString::fromStdString(file));
        }

        // A new window has it, and its dialog shows it.
        MainWindow second(true);
        QCOMPARE(second.storage(), chosen);
        Fields shown;
        QVERIFY(with_storage_dialog(second, [&](StorageDialog& dialog) {
            shown = fields_of(dialog);
            dialog.reject();
        }));
        QCOMPARE(shown.provisioning, QStringLiteral("thin"));
        QCOMPARE(shown.zero_block, QStringLiteral("256KiB"));
        QCOMPARE(shown.preset, QStringLiteral("3par-format"));
        QCOMPARE(shown.device_model, QString::fromStdString(file));

        // --device-model replaces the file for that run only.
        const std::string other = model_file("other.json", R"({"ssd": {"io_latency_seconds": 0.0002}})");
        QVERIFY(second.set_device_model(other));
        QCOMPARE(second.storage().device_model, other);
        QCOMPARE(QSettings().value(QStringLiteral("storage/deviceModel")).toString(),
                 QString::fromStdString(file));

        // What the dialog cannot take keeps it open with the reason on one line; nothing changes.
        const std::string bad = model_file("broken.json", "{\"ssd\": ");
        const QString refusal =
            set_in_dialog(second, {QStringLiteral("thin"), QStringLiteral("256K"),
                                   QStringLiteral("3par-format"), QString::fromStdString(bad)});
        QVERIFY2(refusal.startsWith(QString::fromStdString(bad + ": ")) && !refusal.contains('\n'),
                 qPrintable(refusal));
        QCOMPARE(set_in_dialog(second, {{}, QStringLiteral("1000"), QStringLiteral("default"), {}}),
                 QStringLiteral(
                     "Zeroing block: '1000' is not a positive multiple of 512 bytes (e.g. 64KiB, 1MiB)"));
        QCOMPARE(second.storage().device_model, other);

        // A window that is not interactive (--screenshot, tests) neither reads the settings...
        MainWindow unattended(false);
        QCOMPARE(unattended.storage(), StorageSettings{});
        // ...nor writes them.
        QVERIFY(set_in_dialog(unattended, {QStringLiteral("eager"), {}, QStringLiteral("default"), {}})
                    .isEmpty());
        QCOMPARE(unattended.storage().provisioning, Provisioning::Eager);
        QCOMPARE(QSettings().value(QStringLiteral("storage/provisioning")).toString(),
                 QStringLiteral("thin"));

        // A remembered file that went away: the preset's own parameters, and the window says so.
        fs::remove(file);
        MainWindow third(true);
        QCOMPARE(third.storage(), (StorageSettings{Provisioning::Thin, 256 << 10, "3par-format", ""}));
        bool told = false;
        for (const QLabel* label : third.statusBar()->findChildren<QLabel*>())
            told = told || label->text().startsWith(
                               QStringLiteral("Storage model: %1: ").arg(QString::fromStdString(file)));
        QVERIFY(told);
        for (const std::string& path : {other, bad}) fs::remove(path);
    }
};

QTEST_MAIN(GuiStorageTest)
#include "gui_storage_test.moc"
