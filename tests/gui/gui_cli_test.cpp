// SPDX-License-Identifier: GPL-2.0-or-later
// guestfrag-gui as a program: --help/--version without a display, bad images exit 2 with
// the one-line error, and --screenshot of a generated VMDK under Xvfb.
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <QImage>
#include <QtTest>

#include "app/gui/main_window.hpp"
#include "gui_image.hpp"
#include "support/nbd_server.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;

namespace {

/// guestfrag-gui with `args`, with no display of any kind in its environment.
test::CommandResult run_headless(const std::vector<std::string>& args,
                                 const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv{"env", "-u", "DISPLAY", "-u", "WAYLAND_DISPLAY", "-u", "QT_QPA_PLATFORM"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back(GUESTFRAG_GUI_EXE);
    argv.insert(argv.end(), args.begin(), args.end());
    return test::run(argv);
}

/// guestfrag-gui with `args` on Qt's offscreen platform.
test::CommandResult run_offscreen(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"env", "QT_QPA_PLATFORM=offscreen", GUESTFRAG_GUI_EXE};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::run(argv);
}

fs::path scratch(const std::string& name) {
    return test::scratch_dir() / ("gui_" + std::to_string(QCoreApplication::applicationPid()) + "_" + name);
}

std::size_t distinct_colours(const QImage& image) {
    std::set<QRgb> colours;
    for (int y = 0; y < image.height(); y += 2)
        for (int x = 0; x < image.width(); x += 2) colours.insert(image.pixel(x, y));
    return colours.size();
}

}  // namespace

class GuiCliTest : public QObject {
    Q_OBJECT

private slots:
    void helpAndVersionNeedNoDisplay() {
        const auto help = run_headless({"--help"});
        QCOMPARE(help.status, 0);
        QVERIFY(help.out.find("Usage: guestfrag-gui") != std::string::npos);
        QVERIFY(help.out.find("--screenshot") != std::string::npos);
        // Read at 80 columns, as its man page is (help2man makes the page from it).
        std::istringstream lines(help.out);
        for (std::string line; std::getline(lines, line);) QVERIFY2(line.size() <= 80, line.c_str());
        const auto version = run_headless({"--version"});
        QCOMPARE(version.status, 0);
        QVERIFY(version.out.rfind("guestfrag-gui ", 0) == 0);
    }

    void noDisplayIsSaidInOneLine() {
        // A window with no display of any kind: one line and exit 1, not Qt's abort.
        const auto r = run_headless({test::gui_test_image().string()});
        QCOMPARE(r.status, 1);
        QVERIFY2(r.err.rfind("guestfrag-gui: error: no display to open the window on", 0) == 0,
                 r.err.c_str());
        QCOMPARE(std::count(r.err.begin(), r.err.end(), '\n'), 1);
    }

    void usageErrorsExit1() {
        const auto r = run_offscreen({"--strategy", "fastest", "x.img"});
        QCOMPARE(r.status, 1);
        QVERIFY(r.err.rfind("guestfrag-gui: error: --strategy", 0) == 0);
        const fs::path model = scratch("model.json");
        std::ofstream(model) << R"({"ssd": {"io_latency": 0.001}})";
        const auto bad = run_offscreen({"--device-model", model.string(), "x.img"});
        QCOMPARE(bad.status, 1);
        QVERIFY2(bad.err.rfind("guestfrag-gui: error: --device-model: " + model.string() +
                                   ": ssd.io_latency: no such device model parameter",
                               0) == 0,
                 bad.err.c_str());
        const auto twice =
            run_offscreen({"--device-model", model.string(), "--device-model", model.string(), "x.img"});
        QCOMPARE(twice.status, 1);
        QVERIFY2(twice.err.rfind("guestfrag-gui: error: only one --device-model may be given", 0) == 0,
                 twice.err.c_str());
        for (const char* size : {"1280", "1280x", "x720", "12x7", "1280x720x2", "99999x720", "-1280x720"}) {
            const auto wrong = run_offscreen({"x.img", "--screenshot", "x.png", "--size", size});
            QCOMPARE(wrong.status, 1);
            QCOMPARE(wrong.err, "guestfrag-gui: error: --size: '" + std::string(size) +
                                    "' is not WIDTHxHEIGHT in pixels, 640x480 to 7680x4320 (see --help)\n");
        }
    }

    void badImageExits2WithOneLine() {
        const fs::path bad = scratch("bad.img");
        {
            std::ofstream out(bad, std::ios::binary);
            out << std::string(1 << 20, '\x5a');
        }
        const fs::path png = scratch("bad.png");
        const auto r = run_offscreen({bad.string(), "--screenshot", png.string()});
        QCOMPARE(r.status, 2);
        const std::string prefix = "guestfrag-gui: error: " + bad.string() + ": ";
        QVERIFY2(r.err.rfind(prefix, 0) == 0, r.err.c_str());
        QVERIFY2(r.err.find('\n') == r.err.size() - 1, r.err.c_str());
        QVERIFY(!fs::exists(png));
        fs::remove(bad);

        const auto missing = run_offscreen({scratch("absent.vmdk").string(), "--screenshot", png.string()});
        QCOMPARE(missing.status, 2);
        QVERIFY(missing.err.rfind("guestfrag-gui: error: " + scratch("absent.vmdk").string() + ": ", 0) == 0);
    }

    void screenshotWithoutDisplayDrawsOffscreen() {
        const fs::path png = scratch("offscreen.png");
        const auto r = run_headless({test::gui_test_image().string(), "--screenshot", png.string()});
        QVERIFY2(r.status == 0, r.err.c_str());
        QVERIFY2(r.err.empty(), r.err.c_str());
        QImage image(QString::fromStdString(png.string()));
        QCOMPARE(image.size(), gui::kWindowSize);
        QVERIFY(distinct_colours(image) > 64);
        fs::remove(png);
        // --size: the screenshot is that size.
        const auto sized = run_headless(
            {test::gui_test_image().string(), "--screenshot", png.string(), "--size", "1920x1080"});
        QVERIFY2(sized.status == 0, sized.err.c_str());
        QCOMPARE(QImage(QString::fromStdString(png.string())).size(), QSize(1920, 1080));
        fs::remove(png);
        // An unwritable path: one line, exit 2, nothing written.
        const auto unwritable =
            run_headless({test::gui_test_image().string(), "--screenshot", "/nonexistent/shot.png"});
        QCOMPARE(unwritable.status, 2);
        QVERIFY2(unwritable.err.find("cannot write the screenshot") != std::string::npos,
                 unwritable.err.c_str());
        QCOMPARE(std::count(unwritable.err.begin(), unwritable.err.end(), '\n'), 1);
    }

    void screenshotOfEachDialog() {
        // --dialog draws the settings dialog, or the progress dialog of a real run as it ends
        // or (throttled, then cancelled) in its copy step, over the middle of the window: the
        // picture is the window's size, and it differs from the window alone in its middle, not
        // at its corner. A run writes into a temporary directory of its own, gone when the
        // window closes.
        const std::string image = test::gui_test_image().string();
        const fs::path plain_png = scratch("plain.png");
        const auto plain = run_headless(
            {image, "--screenshot", plain_png.string(), "--size", "1280x720", "--strategy", "defrag"});
        QVERIFY2(plain.status == 0, plain.err.c_str());
        const QImage window(QString::fromStdString(plain_png.string()));
        const fs::path temporary = scratch("tmp");
        fs::create_directories(temporary);
        for (const char* dialog : {"apply", "compact", "storage", "apply-run", "compact-run", "apply-running",
                                   "compact-running"}) {
            const fs::path png = scratch(std::string(dialog) + ".png");
            const auto r = run_headless({image, "--screenshot", png.string(), "--size", "1280x720",
                                         "--strategy", "defrag", "--dialog", dialog},
                                        {"TMPDIR=" + temporary.string()});
            QVERIFY2(r.status == 0, r.err.c_str());
            QVERIFY2(r.err.empty(), r.err.c_str());
            const QImage shot(QString::fromStdString(png.string()));
            QCOMPARE(shot.size(), QSize(1280, 720));
            QCOMPARE(shot.pixel(0, 0), window.pixel(0, 0));  // the window's corner is the window's
            int changed = 0;
            for (int y = 300; y < 420; y += 4)
                for (int x = 500; x < 780; x += 4) changed += shot.pixel(x, y) != window.pixel(x, y);
            QVERIFY2(changed > 30 * 70 / 4,
                     qPrintable(QString::fromLatin1(dialog) +
                                QStringLiteral(": %1 of 2100 middle pixels changed").arg(changed)));
            fs::remove(png);
            // (Qt may leave its own runtime directory there, empty.)
            for (const auto& entry : fs::recursive_directory_iterator(temporary))
                QVERIFY2(!entry.is_regular_file(), entry.path().c_str());
        }
        fs::remove(plain_png);
        fs::remove_all(temporary);
        // Usage errors: a dialog the window does not have, and --dialog without --screenshot.
        const auto unknown = run_offscreen({image, "--screenshot", "x.png", "--dialog", "print"});
        QCOMPARE(unknown.status, 1);
        QVERIFY2(unknown.err.find("--dialog: 'print' is not one of apply, compact, storage, apply-run, "
                                  "compact-run, apply-running, compact-running") != std::string::npos,
                 unknown.err.c_str());
        const auto alone = run_offscreen({image, "--dialog", "apply"});
        QCOMPARE(alone.status, 1);
        QVERIFY2(alone.err.find("--dialog needs --screenshot") != std::string::npos, alone.err.c_str());
    }

    void imageOnAnNbdServer() {
        const test::NbdServer server("nbdkit", {"file", "file=" + test::gui_test_image().string()});
        const fs::path png = scratch("nbd.png");
        const auto r = run_headless({server.uri(), "--screenshot", png.string()});
        QVERIFY2(r.status == 0, r.err.c_str());
        QImage image(QString::fromStdString(png.string()));
        QCOMPARE(image.size(), gui::kWindowSize);
        QVERIFY(distinct_colours(image) > 64);
        fs::remove(png);
        // A server that is not there: one line and exit 2, as for a missing file.
        const std::string gone = "nbd+unix:///?socket=" + scratch("none.sock").string();
        const auto missing = run_offscreen({gone, "--screenshot", png.string()});
        QCOMPARE(missing.status, 2);
        QVERIFY2(missing.err.rfind("guestfrag-gui: error: " + gone + ": cannot connect to ", 0) == 0,
                 missing.err.c_str());
        QVERIFY(missing.err.find('\n') == missing.err.size() - 1);
        QVERIFY(!fs::exists(png));
    }

    void screenshotOfVmdkUnderXvfb() {
        // Oracles and tools are build dependencies: without them the test fails, never skips.
        for (const char* tool : {"xvfb-run", "xauth", "qemu-img"})
            QVERIFY2(test::have_tool(tool), (std::string(tool) + " is not on PATH").c_str());
        const fs::path raw = test::gui_test_image();
        const fs::path vmdk = scratch("disk.vmdk");
        const fs::path png = scratch("window.png");
        const auto convert = test::run({"qemu-img", "convert", "-O", "vmdk", raw.string(), vmdk.string()});
        QVERIFY2(convert.status == 0, convert.err.c_str());
        // xcb, not the offscreen platform the suite sets: this is the real X11 path.
        const auto r = test::run({"xvfb-run", "-a", "-s", "-screen 0 1600x1000x24", "env", "QT_QPA_PLATFORM=xcb",
                                  GUESTFRAG_GUI_EXE, vmdk.string(), "--screenshot", png.string(), "--tab",
                                  "histograms"});
        QVERIFY2(r.status == 0, (r.out + r.err).c_str());
        QImage image(QString::fromStdString(png.string()));
        QVERIFY(!image.isNull());
        QCOMPARE(image.size(), gui::kWindowSize);
        // A blank or single-widget window has a handful of colours; the map, charts and
        // text of a real one have hundreds.
        QVERIFY2(distinct_colours(image) > 64, qPrintable(QString::number(distinct_colours(image))));
        fs::remove(vmdk);
        fs::remove(png);
    }
};

QTEST_GUILESS_MAIN(GuiCliTest)
#include "gui_cli_test.moc"
