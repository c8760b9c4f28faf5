// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/gui_options.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string_view>

#include "core/plan/planner.hpp"

namespace guestfrag::gui {

namespace {

/// "1280x720" → {1280, 720}, each within what a window and a screenshot can be.
std::pair<int, int> parse_window_size(const std::string& text) {
    const std::size_t x = text.find('x');
    const auto number = [&](std::size_t from, std::size_t to) {
        const std::string digits = text.substr(from, to - from);
        if (digits.empty() || digits.size() > 5 ||
            digits.find_first_not_of("0123456789") != std::string::npos)
            return -1;
        return std::stoi(digits);
    };
    const int width = x == std::string::npos ? -1 : number(0, x);
    const int height = x == std::string::npos ? -1 : number(x + 1, text.size());
    if (width < 640 || width > 7680 || height < 480 || height > 4320)
        throw std::invalid_argument("--size: '" + text +
                                    "' is not WIDTHxHEIGHT in pixels, 640x480 to 7680x4320");
    return {width, height};
}

}  // namespace

GuiOptions parse_gui_options(const std::vector<std::string>& args) {
    GuiOptions out;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&]() -> const std::string& {
            if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
            return args[++i];
        };
        if (a == "-h" || a == "--help") {
            out.help = true;
        } else if (a == "--version") {
            out.version = true;
        } else if (a == "--parent") {
            const std::string& text = value();
            const auto parent = parse_parent_override(text);
            if (!parent) throw std::invalid_argument("--parent: '" + text + "' is not PATH, DEPTH=PATH or NAME=PATH");
            out.parents.push_back(*parent);
        } else if (a == "--strategy") {
            out.strategy = value();
            if (!parse_strategy(*out.strategy))
                throw std::invalid_argument("--strategy: '" + *out.strategy + "' is not one of " +
                                            strategy_choices());
        } else if (a == "--device-model") {
            // Read once the window holds the preset it refines (a pipe can be read only once).
            if (out.device_model) throw std::invalid_argument("only one --device-model may be given");
            out.device_model = value();
        } else if (a == "--screenshot") {
            out.screenshot = value();
        } else if (a == "--tab") {
            out.tab = value();
            if (out.tab != "files" && out.tab != "histograms" && out.tab != "impact" && out.tab != "warnings" &&
                out.tab != "trade-off")
                throw std::invalid_argument("--tab: '" + out.tab +
                                            "' is not one of files, histograms, impact, trade-off");
        } else if (a == "--dialog") {
            out.dialog = value();
            static constexpr std::string_view kDialogs[] = {"apply",          "compact",     "storage",
                                                            "apply-run",      "compact-run", "apply-running",
                                                            "compact-running"};
            if (std::ranges::find(kDialogs, *out.dialog) == std::end(kDialogs)) {
                std::string names;
                for (const std::string_view d : kDialogs) (names += names.empty() ? "" : ", ") += d;
                throw std::invalid_argument("--dialog: '" + *out.dialog + "' is not one of " + names);
            }
        } else if (a == "--size") {
            out.size = parse_window_size(value());
        } else if (a == "--map") {
            out.map = value();
            if (out.map != "allocation" && out.map != "layers")
                throw std::invalid_argument("--map: '" + out.map + "' is not one of allocation, layers");
        } else if (!a.empty() && a[0] == '-') {
            throw std::invalid_argument("unknown option " + a);
        } else if (out.image) {
            throw std::invalid_argument("only one IMAGE may be given");
        } else {
            out.image = a;
        }
    }
    if (out.screenshot && !out.image) throw std::invalid_argument("--screenshot needs an IMAGE");
    if (out.dialog && !out.screenshot) throw std::invalid_argument("--dialog needs --screenshot");
    return out;
}

std::string gui_usage() {
    return "Usage: guestfrag-gui [IMAGE] [--parent [DEPTH=|NAME=]PATH]... [--strategy S]\n"
           "                     [--device-model FILE]\n"
           "       guestfrag-gui IMAGE --screenshot FILE.png [--strategy S] [--tab T]\n"
           "                     [--map M] [--size WxH] [--dialog D]\n"
           "\n"
           "Desktop viewer of guestfrag: cluster map, files, plan, IO histograms and storage\n"
           "warnings of a Windows guest disk image. Nothing is ever written to the image.\n"
           "\n"
           "  IMAGE              raw, VMDK, VHD, VHDX or qcow2 disk image to open\n"
           "  --parent [DEPTH=|NAME=]PATH\n"
           "                     a moved or missing parent: of the layer at DEPTH, of the\n"
           "                     name its child records, or (a bare PATH) the image's own\n"
           "                     parent\n"
           "  --strategy S       " +
           strategy_choices() +
           "\n"
           "                     (default: the one `guestfrag report` recommends)\n"
           "  --device-model FILE\n"
           "                     device parameters for the estimate and impact, for this\n"
           "                     run in place of the file of Settings > Storage model: any\n"
           "                     subset of what `guestfrag estimate --json` prints under\n"
           "                     device_models\n"
           "  --screenshot FILE  open IMAGE, wait for analysis, plan and estimate, save the\n"
           "                     window as a PNG and exit (0 ok, 2 bad image)\n"
           "  --tab T            tab shown: files (default), histograms, impact (also:\n"
           "                     warnings) or trade-off\n"
           "  --map M            cluster map colouring: allocation (default) or layers\n"
           "  --dialog D         with --screenshot: the settings dialog of apply (File >\n"
           "                     Apply plan to a copy), compact or storage (Settings >\n"
           "                     Storage model), shown over the window as it opens (exit 1\n"
           "                     when the plan has no moves to apply); apply-run or\n"
           "                     compact-run: the progress dialog of a real apply of the\n"
           "                     plan or a compaction, run with the settings dialog's\n"
           "                     defaults into a temporary directory (removed on exit), at\n"
           "                     its end (exit 2 when the run failed); apply-running or\n"
           "                     compact-running: the same run limited to 1 MiB/s, in its\n"
           "                     copy step once it shows the time left, then cancelled\n"
           "  --size WxH         window size in pixels, e.g. 1280x720 (default: 1280x860,\n"
           "                     or the screen's available size when smaller)\n"
           "  --version          print the version and exit\n"
           "  -h, --help         print this help and exit\n";
}

}  // namespace guestfrag::gui
