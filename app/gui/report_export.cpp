// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/report_export.hpp"

#include <QBuffer>
#include <QFile>

#include "analyzers/fragmentation.hpp"
#include "app/gui/files_model.hpp"
#include "app/gui/plan_writes_panel.hpp"
#include "app/gui/provisioned_model.hpp"

namespace guestfrag::gui {

namespace {

QString png_data_url(const QImage& image) {
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    image.save(&buffer, "PNG");
    return QStringLiteral("data:image/png;base64,") + QString::fromLatin1(bytes.toBase64());
}

QString esc(const std::string& text) { return QString::fromStdString(text).toHtmlEscaped(); }

QString tr_row(std::initializer_list<QString> cells, const char* tag = "td") {
    QString out = QStringLiteral("<tr>");
    for (const QString& c : cells) out += QStringLiteral("<%1>%2</%1>").arg(QString::fromLatin1(tag), c);
    return out + QStringLiteral("</tr>\n");
}

/// `model` as an HTML table: its column titles on one line, its row labels as row headers,
/// every cell as shown on screen.
QString provisioned_table(const ProvisionedModel& model) {
    QString html = QStringLiteral("<table>\n<tr><th></th>");
    for (int c = 0; c < model.columnCount(); ++c)
        html += QStringLiteral("<th>%1</th>").arg(model.column_title(c).toHtmlEscaped());
    html += QStringLiteral("</tr>\n");
    for (int r = 0; r < model.rowCount(); ++r) {
        html += QStringLiteral("<tr><th>%1</th>")
                    .arg(model.headerData(r, Qt::Vertical, Qt::DisplayRole).toString().toHtmlEscaped());
        for (int c = 0; c < model.columnCount(); ++c)
            html += QStringLiteral("<td>%1</td>").arg(model.index(r, c).data().toString().toHtmlEscaped());
        html += QStringLiteral("</tr>\n");
    }
    return html + QStringLiteral("</table>\n");
}

}  // namespace

QString html_report(const OpenedImage& opened, const PlanResult& plan, const QString& headline,
                    const QImage& io_length_chart, const QImage& seek_distance_chart) {
    const ImageAnalysis& a = *opened.analysis;
    const VolumeAnalysis& v = a.volumes.at(plan.volume);
    const PlanSummary& s = plan.plan.summary;
    QString html = QStringLiteral(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>guestfrag report</title>\n"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}img{max-width:48%}</style>"
        "</head><body>\n");
    html += QStringLiteral("<h1>%1</h1>\n<p>%2, %3 virtual, %4 layer(s)</p>\n")
                .arg(esc(a.path), esc(std::string(format_name(a.format))), size_text(a.virtual_size))
                .arg(a.layers.size());
    html += QStringLiteral("<h2>Partition %1 (%2)</h2>\n<table>\n").arg(v.map.partition).arg(esc(v.map.label));
    html += tr_row({QStringLiteral("cluster size"), size_text(v.map.cluster_size)});
    html += tr_row({QStringLiteral("clusters"), QString::number(v.map.total_clusters)});
    html += tr_row({QStringLiteral("files"), QString::number(v.files.files)});
    html += tr_row({QStringLiteral("fragmented files"), QString::number(v.files.fragmented_files)});
    html += tr_row({QStringLiteral("fragmentation"), QString::number(v.files.fragmentation_percent, 'f', 2) + "%"});
    html += tr_row({QStringLiteral("free space fragmentation"),
                    QString::number(v.free_space.fragmentation_percent, 'f', 2) + "%"});
    for (const LayerUsage& u : v.layers)
        html += tr_row({QStringLiteral("layer %1 in its file").arg(u.depth),
                        QStringLiteral("%1 extents, %2 seeks (%3 backward), %4% fragmented")
                            .arg(u.host.extents)
                            .arg(u.host.seeks)
                            .arg(u.host.backward_seeks)
                            .arg(u.host.fragmentation_percent, 0, 'f', 2)});
    html += QStringLiteral("</table>\n<h3>Most fragmented</h3>\n<table>\n");
    html += tr_row({QStringLiteral("path"), QStringLiteral("stream"), QStringLiteral("size"), QStringLiteral("fragments")},
                   "th");
    for (const Stream* st : most_fragmented_streams(v.map, 20))
        html += tr_row({esc(v.map.path_of(st->mft_record)), esc(st->label()), size_text(st->size),
                        QString::number(st->fragments())});
    html += QStringLiteral("</table>\n<h2>Plan: %1</h2>\n<table>\n").arg(esc(plan.plan.strategy));
    html += tr_row({QStringLiteral(""), QStringLiteral("before"), QStringLiteral("after")}, "th");
    html += tr_row({QStringLiteral("fragments"), QString::number(s.fragments_before), QString::number(s.fragments_after)});
    html += tr_row({QStringLiteral("free extents"), QString::number(s.free_extents_before),
                    QString::number(s.free_extents_after)});
    html += tr_row({QStringLiteral("reclaimable"), size_text(s.reclaimable_bytes_before),
                    size_text(s.reclaimable_bytes_after)});
    html += QStringLiteral("</table>\n<p>%1 moves, %2 moved; thin growth %3, clone delta growth %4</p>\n")
                .arg(s.moves)
                .arg(size_text(s.moved_bytes), size_text(s.thin_growth_bytes), size_text(s.clone_delta_growth_bytes));
    html += QStringLiteral("<h2>IO estimate</h2>\n<p>%1</p>\n").arg(headline);
    // The histogram tab's "Eager, lazy and thin" table, from the same model.
    ProvisionedModel provisioned;
    provisioned.set_estimate(plan.estimate ? &*plan.estimate : nullptr);
    html += QStringLiteral("<h3>Eager, lazy and thin</h3>\n") + provisioned_table(provisioned);
    html += QStringLiteral("<p><img alt=\"IO length histogram\" src=\"%1\"> <img alt=\"seek distance histogram\" src=\"%2\"></p>\n")
                .arg(png_data_url(io_length_chart), png_data_url(seek_distance_chart));
    html += QStringLiteral("<h2>Storage impact</h2>\n");
    if (plan.impact) {
        html += QStringLiteral("<table>\n");
        html += tr_row({QStringLiteral("severity"), QStringLiteral("code"), QStringLiteral("at stake"), QStringLiteral("message")},
                       "th");
        for (const ImpactWarning& w : plan.impact->warnings)
            html += tr_row({QString::fromUtf8(severity_name(w.severity).data(), static_cast<qsizetype>(severity_name(w.severity).size())),
                            esc(w.code), size_text(w.bytes), esc(w.message)});
        html += QStringLiteral("</table>\n");
        if (plan.impact->warnings.empty()) html += QStringLiteral("<p>No warnings.</p>\n");
        // The Impact tab's "Carrying out the plan" section: caption, figures, table.
        const PlanWrites& writes = plan.impact->plan_writes;
        QStringList lines;
        for (const QString& line : plan_writes_lines(writes)) lines << line.toHtmlEscaped();
        html += QStringLiteral("<h3>%1</h3>\n<p>%2</p>\n")
                    .arg(plan_writes_caption(writes).toHtmlEscaped(), lines.join(QStringLiteral("<br>\n")));
        ProvisionedModel own;
        own.set_stats(&writes.stats, writes.provisioning.type);
        html += provisioned_table(own);
    } else {
        html += QStringLiteral("<p>Not available: %1</p>\n").arg(esc(plan.impact_error));
    }
    return html + QStringLiteral("</body></html>\n");
}

void write_text_file(const QString& path, const QByteArray& text) {
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) || file.write(text) != text.size() || !file.flush())
        throw Error(ErrorKind::Io, "cannot write " + path.toStdString() + ": " + file.errorString().toStdString());
}

}  // namespace guestfrag::gui
