// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/provisioned_model.hpp"

#include <array>
#include <cstdio>

#include <QFont>
#include <QHeaderView>
#include <QScrollBar>
#include <QTableView>

namespace guestfrag::gui {

namespace {

// The CLI's number rules (app/cli/columns.cpp fixed(), estimate_text.cpp), written again here:
// the GUI does not link the CLI. printf's "%.*f", not QString::number, so that both round
// alike by construction.
QString fixed(double value, int decimals) {
    std::array<char, 64> buf{};
    std::snprintf(buf.data(), buf.size(), "%.*f", decimals, value);
    return QString::fromLatin1(buf.data());
}

QString type_name(Provisioning type) {
    const std::string_view name = provisioning_name(type);
    return QString::fromLatin1(name.data(), static_cast<qsizetype>(name.size()));
}

}  // namespace

QString estimate_seconds_text(double seconds) {
    if (seconds < 1) return fixed(seconds * 1e3, 1) + QStringLiteral(" ms");
    if (seconds < 600) return fixed(seconds, 2) + QStringLiteral(" s");
    return fixed(seconds / 60, 1) + QStringLiteral(" min");
}

QString latency_text(double seconds) {
    // Queue-depth-1 latencies are mostly below a millisecond: those in µs.
    return seconds < 1e-3 ? fixed(seconds * 1e6, 1) + QStringLiteral(" µs") : estimate_seconds_text(seconds);
}

std::vector<ProvisionedRow> provisioned_rows(const IoStats& s) {
    std::vector<ProvisionedRow> rows;
    auto row = [&](const QString& label, auto cell) {
        ProvisionedRow r{label, {}};
        for (std::size_t i = 0; i < s.provisioned.size(); ++i) r.cells[i] = cell(s.provisioned[i]);
        rows.push_back(std::move(r));
    };
    row(QStringLiteral("IOs"), [&](const ProvisionedSeconds&) {
        return ProvisionedCell{static_cast<double>(s.ios), QString::number(s.ios)};
    });
    row(QStringLiteral("First writes"), [&](const ProvisionedSeconds& p) {
        return ProvisionedCell{static_cast<double>(p.first_writes), QString::number(p.first_writes)};
    });
    const std::pair<const char*, double DeviceSeconds::*> models[] = {
        {"HDD", &DeviceSeconds::hdd}, {"SSD", &DeviceSeconds::ssd}, {"Array", &DeviceSeconds::array}};
    for (const auto& entry : models) {
        const QString model = QString::fromLatin1(entry.first);
        const auto member = entry.second;
        row(model + QStringLiteral(" time"), [&](const ProvisionedSeconds& p) {
            const double seconds = p.device_seconds.*member;
            return ProvisionedCell{seconds, estimate_seconds_text(seconds)};
        });
        row(model + QStringLiteral(" IOPS"), [&](const ProvisionedSeconds& p) {
            const double iops = throughput(s.ios, s.bytes, p.device_seconds.*member).iops;
            return ProvisionedCell{iops, fixed(iops, 0)};
        });
        row(model + QStringLiteral(" MB/s"), [&](const ProvisionedSeconds& p) {
            const double rate = throughput(s.ios, s.bytes, p.device_seconds.*member).mb_per_second;
            return ProvisionedCell{rate, fixed(rate, 1)};
        });
        row(model + QStringLiteral(" mean latency"), [&](const ProvisionedSeconds& p) {
            const double latency = throughput(s.ios, s.bytes, p.device_seconds.*member).mean_latency_seconds;
            return ProvisionedCell{latency, latency_text(latency)};
        });
    }
    return rows;
}

ProvisionedModel::ProvisionedModel(QObject* parent) : QAbstractTableModel(parent) {}

void ProvisionedModel::set_estimate(const VolumeEstimate* estimate) {
    if (!estimate) return show({}, IoStats{}, disk_);
    std::vector<State> states;
    states.push_back({tr("before"), provisioned_rows(estimate->before.stats)});
    if (estimate->after) states.push_back({tr("after"), provisioned_rows(estimate->after->stats)});
    show(std::move(states), estimate->before.stats, estimate->provisioning.type);
}

void ProvisionedModel::set_stats(const IoStats* stats, Provisioning disk) {
    if (!stats) return show({}, IoStats{}, disk);
    show({State{QString(), provisioned_rows(*stats)}}, *stats, disk);
}

void ProvisionedModel::show(std::vector<State> states, const IoStats& stats, Provisioning disk) {
    beginResetModel();
    states_ = std::move(states);
    for (std::size_t i = 0; i < types_.size(); ++i) types_[i] = stats.provisioned[i].type;
    disk_ = disk;
    endResetModel();
}

int ProvisionedModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() || states_.empty() ? 0 : static_cast<int>(states_.front().rows.size());
}

int ProvisionedModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() || rowCount() == 0 ? 0 : static_cast<int>(3 * states_.size());
}

QString ProvisionedModel::state(int column) const {
    return column < 0 || column >= columnCount() ? QString()
                                                 : states_[static_cast<std::size_t>(column / 3)].name;
}

QVariant ProvisionedModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
    const auto row = static_cast<std::size_t>(index.row());
    const ProvisionedCell& cell = states_[static_cast<std::size_t>(index.column() / 3)]
                                      .rows[row]
                                      .cells[static_cast<std::size_t>(index.column() % 3)];
    switch (role) {
        case Qt::DisplayRole:
            return cell.text;
        case kValueRole:
            return cell.value;
        case Qt::TextAlignmentRole:
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        case Qt::FontRole:
            if (type(index.column()) == disk_) {
                QFont bold;
                bold.setBold(true);
                return bold;
            }
            return {};
        default:
            return {};
    }
}

QString ProvisionedModel::column_title(int column, const QString& separator) const {
    const QString name = state(column);
    QString title = (name.isEmpty() ? QString() : name + separator) + type_name(type(column));
    if (type(column) == disk_) title += tr(" (this disk)");
    return title;
}

QVariant ProvisionedModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation == Qt::Vertical) {
        if (role != Qt::DisplayRole || section < 0 || section >= rowCount()) return {};
        return states_.front().rows[static_cast<std::size_t>(section)].label;
    }
    if (section < 0 || section >= columnCount()) return {};
    // Two lines keep the columns narrow: the state above, the type below.
    if (role == Qt::DisplayRole) return column_title(section, QStringLiteral("\n"));
    if (role == Qt::ToolTipRole && type(section) == disk_)
        return tr("The disk's own provisioning (the top layer's, as the first writes were counted)");
    return {};
}

QTableView* provisioned_view(ProvisionedModel* model, const QString& tooltip) {
    auto* view = new QTableView;
    view->setModel(model);
    view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 4);
    view->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    view->setToolTip(tooltip);
    return view;
}

int full_table_width(const QTableView& view) {
    return view.verticalHeader()->sizeHint().width() + view.horizontalHeader()->length() +
           view.verticalScrollBar()->sizeHint().width() + 2 * view.frameWidth();
}

}  // namespace guestfrag::gui
