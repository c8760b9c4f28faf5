// SPDX-License-Identifier: GPL-2.0-or-later
// guestfrag-gui: the desktop viewer. --help and --version are answered before Qt starts so
// they work without a display; --screenshot runs the window unattended and saves it.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <QApplication>
#include <QDialog>
#include <QFileInfo>
#include <QPainter>
#include <QScreen>
#include <QTemporaryDir>
#include <QTimer>

#include "app/gui/apply_dialog.hpp"
#include "app/gui/apply_progress_dialog.hpp"
#include "app/gui/compact_dialog.hpp"
#include "app/gui/compact_progress_dialog.hpp"
#include "app/gui/gui_options.hpp"
#include "app/gui/main_window.hpp"

namespace {

constexpr int kUsage = 1;
constexpr int kBadInput = 2;

int fail(const std::string& subject, const std::string& reason, int code) {
    std::cerr << "guestfrag-gui: error: " << (subject.empty() ? "" : subject + ": ") << reason << '\n';
    return code;
}

/// Keeps Qt's critical and fatal messages (a display that cannot be opened, ...), drops
/// debug, info and warnings.
void quiet_messages(QtMsgType type, const QMessageLogContext&, const QString& message) {
    if (type == QtCriticalMsg || type == QtFatalMsg) std::cerr << "guestfrag-gui: qt: " << message.toStdString() << '\n';
}

/// `dialog` as a window manager shows it: a title bar with its title above it, a border
/// around (an offscreen grab has neither).
QPixmap decorated(QDialog& dialog) {  // grab() is not const
    const QPixmap body = dialog.grab();
    const int bar = dialog.fontMetrics().height() + 10;
    QPixmap framed(body.width() + 2, body.height() + bar + 2);
    QPainter painter(&framed);
    const QPalette& palette = dialog.palette();
    painter.fillRect(framed.rect(), palette.color(QPalette::Shadow));
    const QRect title(1, 1, body.width(), bar);
    painter.fillRect(title, palette.color(QPalette::Highlight));
    painter.setPen(palette.color(QPalette::HighlightedText));
    painter.drawText(title, Qt::AlignCenter, dialog.windowTitle());
    painter.drawPixmap(1, bar + 1, body);
    return framed;
}

/// What --dialog shows over the window, owned by main so that it goes before the window.
struct ShownDialog {
    std::unique_ptr<QDialog> settings;       ///< apply, compact, storage
    std::unique_ptr<QTemporaryDir> outputs;  ///< apply-run, compact-run: where the run writes
};

/// Waits for the plan and its tab's figures (planFinished) and for the verdict banner
/// (verdictShown). Then, for --dialog, opens the settings dialog `dialog_name` names, or
/// (apply-run, compact-run) carries the plan out, or compacts the image, into a raw disk in
/// a temporary directory as the dialog's defaults would and waits for its end. Lets the
/// event loop lay out and paint once more; saves the window with the dialog drawn over its
/// middle, where a window manager puts a dialog of its parent.
void take_screenshot(QApplication& app, guestfrag::gui::MainWindow& window, const QString& image,
                     const QString& file, const std::optional<std::string>& dialog_name, ShownDialog& shown) {
    namespace gui = guestfrag::gui;
    // A run that failed is still drawn (its dialog says why), but not called a success.
    const auto shoot = [&app, &window, file, dialog_name](QDialog* dialog, bool ran_whole) {
        QTimer::singleShot(250, &window, [&app, &window, file, dialog_name, dialog, ran_whole] {
            QPixmap shot = window.grab();
            if (dialog) {
                const QPixmap over = decorated(*dialog);
                QPainter(&shot).drawPixmap((shot.width() - over.width()) / 2,
                                           (shot.height() - over.height()) / 2, over);
            }
            if (!shot.save(file, "PNG")) {
                (void)fail(file.toStdString(), "cannot write the screenshot", kBadInput);
                app.exit(kBadInput);
            } else if (!ran_whole) {
                (void)fail("", "--dialog " + *dialog_name + ": the run failed; the screenshot shows why",
                           kBadInput);
                app.exit(kBadInput);
            } else {
                app.exit(0);
            }
        });
    };
    const auto refuse = [&app, dialog_name](const std::string& why) {
        (void)fail("", "--dialog " + *dialog_name + ": " + why, kUsage);
        app.exit(kUsage);
    };
    const auto run = [&window, &shown, image, shoot, refuse](const std::string& name) {
        shown.outputs = std::make_unique<QTemporaryDir>();
        if (!shown.outputs->isValid())
            return refuse("cannot make a temporary directory: " + shown.outputs->errorString().toStdString());
        const bool apply = name.starts_with("apply");
        const auto dialog = [&window, apply]() -> gui::NewDiskProgressDialog* {
            if (apply) return window.apply_progress();
            return window.compact_progress();
        };
        // -running: limited to 1 MiB/s, so that the copy step lasts, and drawn once its
        // detail shows the time left; the window's end cancels the run. A run that ends
        // first (a disk of little data) is drawn at its end, as -run is.
        const bool running = name.ends_with("-running");
        const std::uint64_t rate = running ? std::uint64_t{1} << 20 : 0;
        auto shot = std::make_shared<bool>(false);
        const auto finished = [dialog, shoot, shot] {
            if (!std::exchange(*shot, true))
                shoot(dialog(), dialog()->state() == gui::NewDiskProgressDialog::State::Succeeded);
        };
        QString refusal;
        bool started = false;
        if (apply) {
            QObject::connect(&window, &gui::MainWindow::applyFinished, &window, finished);
            gui::ApplyRequest request;
            request.rate = rate;
            request.output =
                shown.outputs
                    ->filePath(QFileInfo(gui::default_apply_output(image, request.format)).fileName())
                    .toStdString();
            started = window.apply_to_copy(request, &refusal);
        } else {
            QObject::connect(&window, &gui::MainWindow::compactFinished, &window, finished);
            gui::CompactRequest request;
            request.rate = rate;
            request.output =
                shown.outputs
                    ->filePath(QFileInfo(gui::default_compact_output(image, request.format)).fileName())
                    .toStdString();
            started = window.compact_to_copy(request, &refusal);
        }
        if (!started) return refuse(refusal.toStdString());
        if (!running) return;
        auto* poll = new QTimer(&window);
        QObject::connect(poll, &QTimer::timeout, &window, [poll, dialog, shoot, shot] {
            if (*shot) return poll->stop();
            if (!dialog()->detail().contains(QStringLiteral(" left"))) return;
            *shot = true;
            poll->stop();
            shoot(dialog(), true);
        });
        poll->start(100);
    };
    auto waiting = std::make_shared<int>(2);
    const auto arrived = [&window, dialog_name, &shown, waiting, shoot, refuse, run] {
        if (--*waiting != 0) return;
        if (!dialog_name) return shoot(nullptr, true);
        if (dialog_name->ends_with("-run") || dialog_name->ends_with("-running")) return run(*dialog_name);
        shown.settings = window.settings_dialog(*dialog_name);
        if (!shown.settings) return refuse("not offered for this image (a plan without moves to apply)");
        shown.settings->show();
        shoot(shown.settings.get(), true);
    };
    QObject::connect(&window, &guestfrag::gui::MainWindow::planFinished, &window, arrived);
    QObject::connect(&window, &guestfrag::gui::MainWindow::verdictShown, &window, arrived);
}

}  // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> raw(argv + 1, argv + argc);
    auto has = [&](const char* flag) { return std::find(raw.begin(), raw.end(), flag) != raw.end(); };
    if (has("--help") || has("-h")) {
        std::cout << guestfrag::gui::gui_usage();
        return 0;
    }
    if (has("--version")) {
        std::cout << "guestfrag-gui " << GUESTFRAG_VERSION << '\n';
        return 0;
    }

    // Without any display Qt's platform plugin aborts. An unattended screenshot needs no
    // screen: it draws offscreen; a window says in one line why it cannot open.
    if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
        qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && !has("-platform")) {
        if (!has("--screenshot"))
            return fail("",
                        "no display to open the window on (DISPLAY and WAYLAND_DISPLAY are unset); "
                        "--screenshot needs none",
                        kUsage);
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }

    // Until the options say otherwise, Qt's chatter (QStandardPaths about XDG_RUNTIME_DIR,
    // platform plugin notes) is dropped: unattended runs promise one error line on stderr.
    qInstallMessageHandler(quiet_messages);
    QApplication app(argc, argv);  // removes Qt's own options (-platform, -style, ...)
    QApplication::setOrganizationName(QStringLiteral("guestfrag"));
    QApplication::setApplicationName(QStringLiteral("guestfrag-gui"));
    QApplication::setApplicationVersion(QStringLiteral(GUESTFRAG_VERSION));

    guestfrag::gui::GuiOptions options;
    try {
        QStringList qt_args = QApplication::arguments();
        std::vector<std::string> args;
        for (qsizetype i = 1; i < qt_args.size(); ++i) args.push_back(qt_args[i].toStdString());
        options = guestfrag::gui::parse_gui_options(args);
    } catch (const std::invalid_argument& e) {
        return fail("", std::string(e.what()) + " (see --help)", kUsage);
    }

    const bool unattended = options.screenshot.has_value();
    if (!unattended) qInstallMessageHandler(nullptr);  // back to Qt's default for people
    guestfrag::gui::MainWindow window(!unattended);
    ShownDialog dialog;
    if (options.strategy) window.set_strategy(*options.strategy);
    if (QString reason; options.device_model && !window.set_device_model(*options.device_model, &reason))
        return fail("", "--device-model: " + reason.toStdString() + " (see --help)", kUsage);
    window.set_tab(options.tab);
    window.set_map_mode(options.map);

    const QSize asked =
        options.size ? QSize(options.size->first, options.size->second) : guestfrag::gui::kWindowSize;
    if (unattended) {
        window.setFixedSize(asked);
        QObject::connect(&window, &guestfrag::gui::MainWindow::failed, &app,
                         [&app, image = *options.image](const QString&, const QString& reason, int code) {
                             (void)fail(image, reason.toStdString(), code);
                             app.exit(code);
                         });
        take_screenshot(app, window, QString::fromStdString(*options.image),
                        QString::fromStdString(*options.screenshot), options.dialog, dialog);
    } else if (const QScreen* screen = QGuiApplication::primaryScreen(); screen && !options.size) {
        // The default size, but never past the screen it opens on (less its panels).
        window.resize(asked.boundedTo(screen->availableGeometry().size()));
    } else {
        window.resize(asked);
    }
    window.show();
    if (options.image) window.open_image(QString::fromStdString(*options.image), options.parents);
    return QApplication::exec();
}
