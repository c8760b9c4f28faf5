// SPDX-License-Identifier: GPL-2.0-or-later
// The IO histograms tab's "Eager, lazy and thin" table: a write workload planned in the
// window, every cell against the estimate's IoStats and against the CLI's `estimate --plan`
// of the same image, plan and workload (its JSON figures and its text cells). The Impact
// tab's "Carrying out the plan" section: every cell and line against `impact --plan`.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QHeaderView>
#include <QLineEdit>
#include <QScrollBar>
#include <QTableView>
#include <QtTest>

#include <nlohmann/json.hpp>

#include "analyzers/analysis.hpp"
#include "app/gui/histogram_panel.hpp"
#include "app/gui/main_window.hpp"
#include "app/gui/plan_panel.hpp"
#include "app/gui/plan_writes_panel.hpp"
#include "app/gui/provisioned_model.hpp"
#include "app/gui/report_export.hpp"
#include "core/plan/plan_io.hpp"
#include "gui_image.hpp"
#include "pipeline/sizes.hpp"

using namespace guestfrag;
using namespace guestfrag::gui;
namespace fs = std::filesystem;

namespace {

constexpr int kTimeoutMs = 120'000;
// Writes new files into the volume's free space: first writes wherever the image has holes.
constexpr const char* kWorkload = "write:300";

fs::path scratch(const std::string& name) {
    return test::scratch_dir() /
           ("gui_prov_" + std::to_string(QCoreApplication::applicationPid()) + "_" + name);
}

/// One "Eager, lazy and thin" block of `estimate`'s text: row label → its three cells.
using TextBlock = std::vector<std::pair<std::string, std::array<std::string, 3>>>;

std::string trim(const std::string& s) {
    const auto first = s.find_first_not_of(' ');
    if (first == std::string::npos) return {};
    return s.substr(first, s.find_last_not_of(' ') - first + 1);
}

/// The block titled `title` ("Eager, lazy and thin (before)"): the CLI prints "  " + the
/// label padded to 24 + each cell right-aligned in 14 columns (estimate_text.cpp). Empty
/// when the title is missing.
TextBlock text_block(const std::string& text, const std::string& title, std::array<std::string, 3>* header) {
    std::istringstream in(text);
    TextBlock block;
    std::string line;
    while (std::getline(in, line) && line != "  " + title) {
    }
    if (!in) return block;
    auto cells = [](const std::string& l) {
        std::array<std::string, 3> out;
        for (std::size_t i = 0; i < 3; ++i)
            out[i] = trim(l.size() > 26 + 14 * i ? l.substr(26 + 14 * i, 14) : "");
        return out;
    };
    if (!std::getline(in, line)) return block;
    *header = cells(line);
    while (std::getline(in, line) && line.size() > 26 && line.rfind("  ", 0) == 0 && line[2] != ' ')
        block.emplace_back(trim(line.substr(2, 24)), cells(line));
    return block;
}

/// What each row of the table holds for one provisioning type, in the table's row order,
/// read from the CLI's JSON `provisioned` entry and from the IoStats the window shows.
std::vector<double> json_figures(const nlohmann::json& p) {
    std::vector<double> out{p.at("ios").get<double>(), p.at("first_writes").get<double>()};
    for (const char* model : {"hdd", "ssd", "array"}) {
        const auto& m = p.at("models").at(model);
        for (const char* key : {"device_seconds", "iops", "mb_per_second", "mean_latency_seconds"})
            out.push_back(m.at(key).get<double>());
    }
    return out;
}

std::vector<double> stats_figures(const IoStats& s, const ProvisionedSeconds& p) {
    std::vector<double> out{static_cast<double>(s.ios), static_cast<double>(p.first_writes)};
    for (const double seconds : {p.device_seconds.hdd, p.device_seconds.ssd, p.device_seconds.array}) {
        const Throughput t = throughput(s.ios, s.bytes, seconds);
        out.insert(out.end(), {seconds, t.iops, t.mb_per_second, t.mean_latency_seconds});
    }
    return out;
}

/// The first line of `text` that starts with `prefix`, with the lines that continue it (a
/// wrapped row's, indented by 30 columns or more) joined on by a space; empty when none
/// starts so.
std::string line_starting(const std::string& text, const std::string& prefix) {
    std::istringstream in(text);
    std::string line, found;
    while (std::getline(in, line)) {
        const std::size_t indent = line.find_first_not_of(' ');
        if (found.empty()) {
            if (line.rfind(prefix, 0) == 0) found = line;
        } else if (indent != std::string::npos && indent >= 30) {
            found += ' ' + line.substr(indent);
        } else {
            break;
        }
    }
    return found;
}

/// One row of the CLI's impact text: "  " + the name padded to 28 + the figure right-aligned
/// in 12 + "   " + what follows it, wrapped (impact_text.cpp row()). {figure, rest}; empty
/// when the row is missing.
std::pair<std::string, std::string> text_row(const std::string& text, const std::string& name) {
    const std::string line = line_starting(text, "  " + name + std::string(28 - name.size(), ' '));
    if (line.empty()) return {};
    return {trim(line.substr(30, 12)), line.size() > 45 ? line.substr(45) : ""};
}

/// Compares cell (r, c) of `model` with the CLI's JSON figure `cli_value` and its text
/// row `cli_row` (label and the cell of type index `k`); adds what differs to `wrong`.
void compare_cell(const ProvisionedModel& model, int r, int c, std::size_t k, double cli_value,
                  const TextBlock::value_type& cli_row, QStringList& wrong) {
    const QString label = model.headerData(r, Qt::Vertical, Qt::DisplayRole).toString();
    const QString where = QStringLiteral("%1 / %2: ").arg(label, model.column_title(c));
    // Exact: the same double the CLI wrote (nlohmann prints doubles round-trip).
    const double shown = model.index(r, c).data(ProvisionedModel::kValueRole).toDouble();
    if (shown != cli_value)
        wrong << where + QStringLiteral("%1, CLI JSON %2").arg(shown, 0, 'g', 17).arg(cli_value, 0, 'g', 17);
    const auto& [cli_label, cells] = cli_row;
    if (label.toStdString() != cli_label)
        wrong << where + QStringLiteral("label, CLI text %1").arg(QString::fromStdString(cli_label));
    // The CLI's ASCII "us" is "µs" on screen; everything else is character for character.
    QString cli_cell = QString::fromStdString(cells[k]);
    if (cli_cell.endsWith(QStringLiteral(" us"))) cli_cell = cli_cell.chopped(2) + QStringLiteral("µs");
    const QString text_shown = model.index(r, c).data().toString();
    if (text_shown != cli_cell)
        wrong << where + QStringLiteral("'%1', CLI text '%2'").arg(text_shown, cli_cell);
}

/// Compares every cell of `model` (three columns, one per type, no state) with the CLI's
/// JSON `provisioned` array and its text block `text`; the disk's own type is `disk`.
QStringList compare_provisioned(const ProvisionedModel& model, const nlohmann::json& provisioned,
                                const std::array<std::string, 3>& text_header, const TextBlock& text,
                                const std::string& disk) {
    QStringList wrong;
    if (model.columnCount() != 3 || model.rowCount() != 14 || text.size() != 14 || provisioned.size() != 3)
        return {QStringLiteral("shape: %1 x %2, CLI text %3 rows, JSON %4 types")
                    .arg(model.rowCount())
                    .arg(model.columnCount())
                    .arg(text.size())
                    .arg(provisioned.size())};
    for (int c = 0; c < 3; ++c) {
        const auto k = static_cast<std::size_t>(c);
        const std::string type = provisioned.at(k).at("type").get<std::string>();
        const QString header = model.headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
        if (!model.state(c).isEmpty()) wrong << QStringLiteral("column %1 has a state").arg(c);
        if (std::string(provisioning_name(model.type(c))) != type || text_header[k] != type)
            wrong << QStringLiteral("column %1: %2, CLI %3").arg(c).arg(header, QString::fromStdString(type));
        const QString title =
            QString::fromStdString(type) + (type == disk ? QStringLiteral(" (this disk)") : QString());
        if (header != title || model.column_title(c) != title)
            wrong << QStringLiteral("header '%1', expected '%2'").arg(header, title);
        const std::vector<double> from_cli = json_figures(provisioned.at(k));
        for (int r = 0; r < 14; ++r) {
            const auto row = static_cast<std::size_t>(r);
            compare_cell(model, r, c, k, from_cli[row], text[row], wrong);
        }
    }
    return wrong;
}

/// The rows of `model` as the HTML report writes them ("<tr><th>label</th><td>cell</td>…")
/// that `html` does not contain.
QStringList rows_missing_from(const QString& html, const ProvisionedModel& model) {
    QStringList missing;
    for (int r = 0; r < model.rowCount(); ++r) {
        QString row = QStringLiteral("<tr><th>%1</th>")
                          .arg(model.headerData(r, Qt::Vertical, Qt::DisplayRole).toString());
        for (int c = 0; c < model.columnCount(); ++c)
            row += QStringLiteral("<td>%1</td>").arg(model.index(r, c).data().toString());
        if (!html.contains(row)) missing << row;
    }
    return missing;
}

/// The CLI's `COMMAND IMAGE --plan PLAN ...` on the window's plan (saved to a scratch file
/// for the call), as JSON and as text: the independent path every figure is checked against.
struct CliOnPlan {
    nlohmann::json json;
    std::string text;
    std::string error;  ///< the CLI's stderr when either call failed
};

CliOnPlan cli_on_plan(const MainWindow& window, const PlanResult& plan, const std::string& command,
                      const std::string& image, const std::vector<std::string>& extra = {}) {
    const fs::path plan_json = scratch(command + "_plan.json");
    { std::ofstream(plan_json) << plan_to_json(plan.plan, window.opened().analysis->volumes.front().map); }
    std::vector<std::string> args{command, image, "--plan", plan_json.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto text = test::run_cli(args);
    args.push_back("--json");
    const auto json = test::run_cli(args);
    fs::remove(plan_json);
    if (text.status != 0 || json.status != 0) return {{}, {}, command + ": " + text.err + json.err};
    return {nlohmann::json::parse(json.out), text.out, {}};
}

}  // namespace

class GuiProvisionedTest : public QObject {
    Q_OBJECT

    fs::path image_path_;

private slots:
    void initTestCase() { image_path_ = test::gui_test_image(); }

    void tableIsTheCliEstimate() {
        MainWindow window(false);
        window.set_strategy("defrag");
        // The plan panel's workload field, filled in as a user would before the first plan.
        QLineEdit* workload = nullptr;
        for (QLineEdit* edit : window.plan_panel()->findChildren<QLineEdit*>())
            if (edit->text() == QStringLiteral("scan")) workload = edit;
        QVERIFY(workload != nullptr);
        workload->setText(QString::fromLatin1(kWorkload));
        window.show();
        window.open_image(QString::fromStdString(image_path_.string()));
        QTRY_VERIFY_WITH_TIMEOUT(window.plan() != nullptr, kTimeoutMs);
        const PlanResult& plan = *window.plan();
        // Planned while the Files tab showed: the estimate waits for its tab.
        QVERIFY(!plan.estimate);
        window.set_tab("histograms");
        QTRY_VERIFY_WITH_TIMEOUT(plan.estimate.has_value() && !window.busy(), kTimeoutMs);
        QCOMPARE(plan.estimate->workload.workload.text(), std::string(kWorkload));
        QVERIFY(plan.estimate->after.has_value());
        QVERIFY(!plan.plan.moves.empty());
        const IoStats& before = plan.estimate->before.stats;
        const IoStats& after = plan.estimate->after->stats;
        // A write workload that pays first writes: otherwise eager, lazy and thin would agree
        // and a column mix-up could pass.
        QVERIFY(before.writes > 0);
        QVERIFY2(before.first_writes > 0 && after.first_writes > 0, "the workload pays no first write");

        const ProvisionedModel& model = *window.histograms()->provisioned_model();
        QCOMPARE(model.rowCount(), 14);
        QCOMPARE(model.columnCount(), 6);

        // The CLI's estimate of the same image, plan and workload: JSON and text.
        const CliOnPlan run =
            cli_on_plan(window, plan, "estimate", image_path_.string(), {"--workload", kWorkload});
        QVERIFY2(run.error.empty(), run.error.c_str());
        const auto& doc = run.json;
        QCOMPARE(doc.at("volumes").size(), std::size_t{1});
        const auto& volume = doc.at("volumes").at(0);
        QCOMPARE(volume.at("partition").get<int>(), plan.estimate->partition);
        const std::string disk = std::string(provisioning_name(plan.estimate->provisioning.type));
        QCOMPARE(volume.at("provisioning").at("type").get<std::string>(), disk);

        std::array<std::string, 3> text_header[2];
        const TextBlock text[2] = {text_block(run.text, "Eager, lazy and thin (before)", &text_header[0]),
                                   text_block(run.text, "Eager, lazy and thin (after)", &text_header[1])};
        QVERIFY2(text[0].size() == 14 && text[1].size() == 14, run.text.c_str());

        QStringList wrong;
        int disk_columns = 0;
        for (int c = 0; c < model.columnCount(); ++c) {
            const bool is_after = c >= 3;
            const auto k = static_cast<std::size_t>(c % 3);
            const IoStats& s = is_after ? after : before;
            const auto& cli = volume.at(is_after ? "after" : "before").at("provisioned").at(k);
            const std::string type = cli.at("type").get<std::string>();
            QCOMPARE(model.state(c), is_after ? QStringLiteral("after") : QStringLiteral("before"));
            QCOMPARE(std::string(provisioning_name(model.type(c))), type);
            QCOMPARE(std::string(provisioning_name(s.provisioned[k].type)), type);
            QCOMPARE(text_header[is_after ? 1 : 0][k], type);
            const QString header = model.headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
            QVERIFY2(header.startsWith(is_after ? QStringLiteral("after\n") : QStringLiteral("before\n")),
                     qPrintable(header));
            QVERIFY2(header.contains(QString::fromStdString(type)), qPrintable(header));
            QCOMPARE(header.contains(QStringLiteral("(this disk)")), type == disk);
            disk_columns += type == disk ? 1 : 0;

            const std::vector<double> from_cli = json_figures(cli);
            const std::vector<double> from_stats = stats_figures(s, s.provisioned[k]);
            for (int r = 0; r < model.rowCount(); ++r) {
                const auto row = static_cast<std::size_t>(r);
                const double shown = model.index(r, c).data(ProvisionedModel::kValueRole).toDouble();
                if (shown != from_stats[row])
                    wrong << QStringLiteral("%1 / %2: %3, IoStats %4")
                                 .arg(model.headerData(r, Qt::Vertical, Qt::DisplayRole).toString(),
                                      model.column_title(c))
                                 .arg(shown, 0, 'g', 17)
                                 .arg(from_stats[row], 0, 'g', 17);
                compare_cell(model, r, c, k, from_cli[row], text[is_after ? 1 : 0][row], wrong);
            }
        }
        QVERIFY2(wrong.isEmpty(), qPrintable(wrong.join(QLatin1Char('\n'))));
        QCOMPARE(disk_columns, 2);  // before and after

        // Filled in while its tab showed, the table stands beside the charts, all of its
        // columns in view at the default window size.
        QApplication::processEvents();
        const QTableView* view = window.histograms()->provisioned_view();
        QVERIFY(view->isVisible());
        QCOMPARE(view->horizontalScrollBar()->maximum(), 0);
        for (int c = 0; c < model.columnCount(); ++c)
            QVERIFY(view->horizontalHeader()->sectionViewportPosition(c) >= 0);
        QVERIFY(window.histograms()->io_length_chart() != nullptr);
        // The charts still export as drawn.
        const QImage io = window.histograms()->chart_image(HistogramPanel::IoLength);
        const QImage seek = window.histograms()->chart_image(HistogramPanel::SeekDistance);
        const QImage charts = window.histograms()->charts_image();
        QVERIFY(!io.isNull() && !seek.isNull());
        QCOMPARE(charts.width(), io.width() + seek.width());
        QCOMPARE(charts.height(), std::max(io.height(), seek.height()));

        // The HTML report carries the table, row by row as the tab shows it.
        const QString html = html_report(window.opened(), plan, window.histograms()->headline(), io, seek);
        QVERIFY(html.contains(QStringLiteral("<h3>Eager, lazy and thin</h3>")));
        const QStringList missing = rows_missing_from(html, model);
        QVERIFY2(missing.isEmpty(), qPrintable(missing.join(QLatin1Char('\n'))));
        QVERIFY(html.contains(
            QStringLiteral("<th>before, %1 (this disk)</th>").arg(QString::fromStdString(disk))));
    }

    void planWritesAreTheCliImpact() {
        MainWindow window(false);
        window.set_strategy("defrag");
        window.show();
        window.open_image(QString::fromStdString(image_path_.string()));
        QTRY_VERIFY_WITH_TIMEOUT(window.plan() != nullptr, kTimeoutMs);
        const PlanResult& plan = *window.plan();
        window.set_tab("impact");  // the impact is assessed when its tab is first shown
        QTRY_VERIFY_WITH_TIMEOUT(plan.has(Figure::Impact) && !window.busy(), kTimeoutMs);
        QVERIFY2(plan.impact.has_value(), plan.impact_error.c_str());
        QVERIFY(!plan.plan.moves.empty());
        const PlanWrites& writes = plan.impact->plan_writes;
        // Moves into the image's holes pay first writes: otherwise eager, lazy and thin would
        // agree and a column mix-up could pass.
        QVERIFY2(writes.stats.first_writes > 0 && writes.into_new_bytes > 0, "the plan pays no first write");

        // The CLI's impact of the same image and plan (the window's defaults are the CLI's).
        const CliOnPlan run = cli_on_plan(window, plan, "impact", image_path_.string());
        QVERIFY2(run.error.empty(), run.error.c_str());
        const auto& doc = run.json;
        QCOMPARE(doc.at("partition").get<int>(), plan.impact->partition);
        const auto& j = doc.at("figures").at("plan_writes");
        const std::string disk = j.at("provisioning").at("type").get<std::string>();
        QCOMPARE(
            j.at("into_written_bytes").get<std::uint64_t>() + j.at("into_new_bytes").get<std::uint64_t>(),
            j.at("written_bytes").get<std::uint64_t>());

        // The table: every cell against the JSON figures and the text's "Eager, lazy and thin".
        const PlanWritesPanel& panel = *window.plan_writes();
        std::array<std::string, 3> text_header;
        const TextBlock text = text_block(run.text, "Eager, lazy and thin", &text_header);
        const QStringList wrong =
            compare_provisioned(*panel.model(), j.at("provisioned"), text_header, text, disk);
        QVERIFY2(wrong.isEmpty(), qPrintable(wrong.join(QLatin1Char('\n'))));

        // The caption is the text's heading; each figure line the text's rows, and the
        // zeroing block and block bytes the JSON fields.
        QCOMPARE(panel.caption().toStdString(), line_starting(run.text, "Carrying out the plan"));
        const auto [ios, ios_more] = text_row(run.text, "IOs of the plan");
        const auto [read, read_more] = text_row(run.text, "data read");
        QVERIFY(!ios.empty() && !read.empty());
        // "data written" is also a row of the storage growth section, above: the last one is the plan's.
        const std::string written = trim(run.text.substr(run.text.rfind("\n  data written ") + 31, 12));
        const std::string provisioning = line_starting(run.text, "  provisioning  ");
        QVERIFY(provisioning.size() > 30);
        const auto [into_written, into_written_more] = text_row(run.text, "into written blocks");
        const auto [into_new, into_new_more] = text_row(run.text, "into new blocks");
        const QStringList expected_text{
            QString::fromStdString("IOs of the plan " + ios + " (" + ios_more + ")"),
            QString::fromStdString("data read " + read + " · data written " + written),
            QString::fromStdString("provisioning " + provisioning.substr(30)),
            QString::fromStdString("into written blocks " + into_written + " (" + into_written_more + ")"),
            QString::fromStdString("into new blocks " + into_new + " (" + into_new_more + ")")};
        QCOMPARE(panel.details(), expected_text.join(QLatin1Char('\n')));
        const QStringList lines = panel.details().split(QLatin1Char('\n'));
        QCOMPARE(lines.value(3),
                 QString::fromStdString("into written blocks " +
                                        format_size(j.at("into_written_bytes").get<std::uint64_t>()) +
                                        " (their zeroing block already written)"));
        QCOMPARE(lines.value(4),
                 QString::fromStdString(
                     "into new blocks " + format_size(j.at("into_new_bytes").get<std::uint64_t>()) + " (" +
                     std::to_string(j.at("first_writes").get<std::uint64_t>()) + " first writes of a " +
                     format_size(j.at("zero_block").get<std::uint64_t>()) + " block)"));
        QVERIFY(panel.details().contains(QString::fromStdString(
            "zeroing block " + format_size(j.at("provisioning").at("zero_block").get<std::uint64_t>()))));

        // On its tab, beside the warnings: every column in view at the default window size.
        QApplication::processEvents();
        QVERIFY(panel.view()->isVisible());
        QCOMPARE(panel.view()->horizontalScrollBar()->maximum(), 0);

        // The HTML report carries the section: heading, figure lines, every row of the table.
        const QString html =
            html_report(window.opened(), plan, window.histograms()->headline(), QImage(), QImage());
        QVERIFY(html.contains(QStringLiteral("<h3>%1</h3>").arg(panel.caption().toHtmlEscaped())));
        for (const QString& line : expected_text)
            QVERIFY2(html.contains(line.toHtmlEscaped()), qPrintable(line));
        const ProvisionedModel& model = *panel.model();
        const QStringList missing = rows_missing_from(html, model);
        QVERIFY2(missing.isEmpty(), qPrintable(missing.join(QLatin1Char('\n'))));
        QVERIFY(html.contains(QStringLiteral("<th>%1 (this disk)</th>").arg(QString::fromStdString(disk))));

        // A failed impact: its reason in place of the section, on the tab and in the report.
        PlanResult failed = plan;
        failed.impact.reset();
        failed.impact_error = "the plan does not apply";
        PlanWritesPanel alone;
        alone.show_result(&failed);
        QCOMPARE(alone.details(), QStringLiteral("Not available: the plan does not apply"));
        QCOMPARE(alone.model()->columnCount(), 0);
        QVERIFY(alone.view()->isHidden());
        const QString failed_html = html_report(window.opened(), failed, QString(), QImage(), QImage());
        QVERIFY(failed_html.contains(QStringLiteral("Not available: the plan does not apply")));
        QVERIFY(!failed_html.contains(QStringLiteral("Carrying out the plan")));
    }

    void formatsAsTheCli() {
        // Hand-computed: the thresholds of estimate's text (1 s, 600 s; 1 ms for latencies).
        QCOMPARE(estimate_seconds_text(0.0123456), QStringLiteral("12.3 ms"));
        QCOMPARE(estimate_seconds_text(0.99994), QStringLiteral("999.9 ms"));
        QCOMPARE(estimate_seconds_text(1.0), QStringLiteral("1.00 s"));
        QCOMPARE(estimate_seconds_text(599.994), QStringLiteral("599.99 s"));
        QCOMPARE(estimate_seconds_text(750), QStringLiteral("12.5 min"));
        QCOMPARE(latency_text(85.34e-6), QStringLiteral("85.3 µs"));
        QCOMPARE(latency_text(0.0042), QStringLiteral("4.2 ms"));
        QCOMPARE(latency_text(0), QStringLiteral("0.0 µs"));

        // Without a plan only before's three columns; without an estimate, nothing.
        VolumeEstimate e;
        e.provisioning.type = Provisioning::Lazy;
        e.before.stats.ios = 4;
        e.before.stats.bytes = 4'000'000;
        e.before.stats.provisioned = {ProvisionedSeconds{Provisioning::Eager, 0, {2, 0.5, 0.25}},
                                      ProvisionedSeconds{Provisioning::Lazy, 3, {4, 1, 0.5}},
                                      ProvisionedSeconds{Provisioning::Thin, 3, {8, 2, 1}}};
        ProvisionedModel model;
        model.set_estimate(&e);
        QCOMPARE(model.columnCount(), 3);
        QCOMPARE(model.headerData(1, Qt::Horizontal, Qt::DisplayRole).toString(),
                 QStringLiteral("before\nlazy (this disk)"));
        QCOMPARE(model.headerData(2, Qt::Horizontal, Qt::DisplayRole).toString(),
                 QStringLiteral("before\nthin"));
        // Lazy on the HDD: 4 s for 4 IOs of 1 MB: 1 IOPS, 1.0 MB/s, 1 s each.
        QCOMPARE(model.index(2, 1).data().toString(), QStringLiteral("4.00 s"));
        QCOMPARE(model.index(3, 1).data().toString(), QStringLiteral("1"));
        QCOMPARE(model.index(4, 1).data().toString(), QStringLiteral("1.0"));
        QCOMPARE(model.index(5, 1).data().toString(), QStringLiteral("1.00 s"));
        // Thin on the array: 1 s: 4 IOPS, 4.0 MB/s, 250.0 ms.
        QCOMPARE(model.index(10, 2).data().toString(), QStringLiteral("1.00 s"));
        QCOMPARE(model.index(11, 2).data().toString(), QStringLiteral("4"));
        QCOMPARE(model.index(12, 2).data().toString(), QStringLiteral("4.0"));
        QCOMPARE(model.index(13, 2).data().toString(), QStringLiteral("250.0 ms"));
        QCOMPARE(model.index(1, 2).data().toString(), QStringLiteral("3"));
        model.set_estimate(nullptr);
        QCOMPARE(model.rowCount(), 0);
        QCOMPARE(model.columnCount(), 0);
    }
};

QTEST_MAIN(GuiProvisionedTest)
#include "gui_provisioned_test.moc"
