// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/image/open_chain.hpp"

namespace guestfrag::gui {

/// The command line of guestfrag-gui. Parsed before any Qt object exists, so that --help,
/// --version and usage errors work without a display.
struct GuiOptions {
    std::optional<std::string> image;
    std::vector<ParentOverride> parents;      ///< --parent, as the CLI reads it
    std::optional<std::string> strategy;      ///< defrag, consolidate, optimize, thin-safe, shrink
    std::optional<std::string> device_model;  ///< --device-model, read by MainWindow::set_device_model
    std::optional<std::string> screenshot;    ///< PNG to write, then exit
    /// --dialog: the settings dialog (apply, compact, storage) or the progress dialog of a run
    /// (apply-run, compact-run) the screenshot shows over the window.
    std::optional<std::string> dialog;
    std::string tab = "files";                ///< tab shown first: files, histograms, impact, trade-off
    std::string map = "allocation";           ///< map colouring: allocation, layers
    /// --size WxH: the window's size in pixels; else the default, within the screen.
    std::optional<std::pair<int, int>> size;
    bool help = false;
    bool version = false;
};

/// Parses argv[1..]. Throws std::invalid_argument with a one-line reason for a usage error.
/// Qt's own options (-platform, -style, ...) are not ours; QApplication removes them first.
[[nodiscard]] GuiOptions parse_gui_options(const std::vector<std::string>& args);

/// The --help text.
[[nodiscard]] std::string gui_usage();

}  // namespace guestfrag::gui
