// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/main_window.hpp"

#include <algorithm>
#include <filesystem>

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include "app/gui/apply_dialog.hpp"
#include "app/gui/background_job.hpp"
#include "app/gui/cluster_map_widget.hpp"
#include "app/gui/compact_dialog.hpp"
#include "app/gui/files_model.hpp"
#include "app/gui/frontier_chart.hpp"
#include "app/gui/histogram_panel.hpp"
#include "app/gui/new_disk_progress_dialog.hpp"
#include "app/gui/plan_panel.hpp"
#include "app/gui/plan_writes_panel.hpp"
#include "app/gui/storage_dialog.hpp"
#include "app/gui/warnings_model.hpp"
#include "core/image/nbd_uri.hpp"
#include "pipeline/verdict.hpp"

namespace guestfrag::gui {

namespace {

constexpr int kRecentFiles = 8;
const QString kRecentKey = QStringLiteral("recentFiles");
// The "Carrying out the plan" column of the Impact tab at the default window size: its
// three table columns and its figures in a few wrapped lines.
constexpr int kPlanWritesWidth = 480;

QString qstr(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

/// What the window shows of volume `index`: its cluster map cells at the default zoom (the
/// files table reads the map itself, lazily). Safe on any thread.
MapCells volume_cells(const OpenedImage& opened, std::size_t index) {
    // Shares the map and layers with the analysis they belong to (aliasing shared_ptr).
    std::shared_ptr<const VolumeMap> map(opened.analysis, &opened.analysis->volumes.at(index).map);
    std::shared_ptr<const std::vector<Layer>> layers(opened.analysis, &opened.analysis->layers);
    return MapCells::compute(std::move(map), std::move(layers), 0);
}

}  // namespace

MainWindow::MainWindow(bool interactive, QWidget* parent)
    : QMainWindow(parent),
      interactive_(interactive),
      job_(new BackgroundJob(this)),
      apply_job_(new BackgroundJob(this)),
      compact_job_(new BackgroundJob(this)),
      progress_timer_(new QTimer(this)),
      map_(new ClusterMapWidget),
      legend_(new MapLegend),
      summary_(new QLabel),
      verdict_job_(new BackgroundJob(this)),
      verdict_(new QLabel),
      volume_box_(new QComboBox),
      state_box_(new QComboBox),
      mode_box_(new QComboBox),
      zoom_box_(new QSpinBox),
      pixels_box_(new QSpinBox),
      plan_panel_(new PlanPanel),
      files_(new FilesModel(this)),
      files_proxy_(new QSortFilterProxyModel(this)),
      files_view_(new QTableView),
      filter_(new QLineEdit),
      histograms_(new HistogramPanel),
      warnings_(new WarningsModel(this)),
      warnings_note_(new QLabel),
      warnings_view_(new QTableView),
      plan_writes_(new PlanWritesPanel),
      frontier_(new FrontierChart),
      tabs_(new QTabWidget),
      status_(new QLabel),
      progress_(new QProgressBar),
      cancel_(new QPushButton(tr("Cancel"))) {
    setWindowTitle(QStringLiteral("guestfrag"));
    setAcceptDrops(true);
    resize(kWindowSize);
    build_menus();
    setCentralWidget(build_central());

    progress_->setMaximumWidth(220);
    progress_->setVisible(false);
    cancel_->setVisible(false);
    statusBar()->addWidget(status_, 1);
    statusBar()->addPermanentWidget(progress_);
    statusBar()->addPermanentWidget(cancel_);
    status_->setText(tr("Open a disk image (File ▸ Open, or drop it here)."));
    if (interactive_) load_storage();

    progress_timer_->setInterval(100);
    connect(progress_timer_, &QTimer::timeout, this, &MainWindow::update_progress);
    connect(cancel_, &QPushButton::clicked, this, &MainWindow::cancel);
    connect(plan_panel_, &PlanPanel::planRequested, this, &MainWindow::run_plan);
    connect(plan_panel_, &PlanPanel::applyRequested, this, &MainWindow::choose_apply);
    update_actions_enabled();
    connect(map_, &ClusterMapWidget::cellsChanged, this, [this] {
        legend_->set_entries(legend_entries(map_->mode(), map_->cells(), map_->layer_cells()));
        const QSignalBlocker block(zoom_box_);
        zoom_box_->setValue(
            static_cast<int>(std::min<std::int64_t>(map_->clusters_per_cell(), zoom_box_->maximum())));
    });
}

MainWindow::~MainWindow() = default;

void MainWindow::build_menus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&Open image…"), QKeySequence::Open, this, &MainWindow::choose_image);
    file->addAction(tr("Open &URI…"), this, &MainWindow::choose_uri);
    recent_menu_ = file->addMenu(tr("Open &recent"));
    rebuild_recent_menu();
    file->addSeparator();
    file->addAction(tr("Export plan &JSON…"), this, &MainWindow::export_plan);
    file->addAction(tr("Export &HTML report…"), this, &MainWindow::export_report);
    file->addAction(tr("Export &charts as PNG…"), this, &MainWindow::export_charts);
    file->addSeparator();
    apply_action_ = file->addAction(tr("&Apply plan to a copy…"), this, &MainWindow::choose_apply);
    apply_action_->setToolTip(tr("Carry the plan out on a new disk (the image is only read) and verify it"));
    compact_action_ = file->addAction(tr("&Compact to a new image…"), this, &MainWindow::choose_compact);
    compact_action_->setToolTip(
        tr("Write a new image holding only what NTFS uses, packed into the fewest granules (the image is "
           "only read), and verify it"));
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
    QMenu* settings = menuBar()->addMenu(tr("&Settings"));
    storage_action_ = settings->addAction(tr("&Storage model…"), this, &MainWindow::choose_storage);
    storage_action_->setToolTip(
        tr("The provisioning, zeroing block and device parameters the estimate and impact assume"));
}

QWidget* MainWindow::build_central() {
    state_box_->addItems({tr("Before"), tr("After plan")});
    state_box_->setEnabled(false);
    mode_box_->addItems({tr("Allocation"), tr("Layers")});
    zoom_box_->setRange(1, 1 << 30);
    zoom_box_->setToolTip(tr("Clusters per cell"));
    pixels_box_->setRange(2, 32);
    pixels_box_->setValue(6);
    pixels_box_->setSuffix(QStringLiteral(" px"));
    pixels_box_->setToolTip(tr("Cell size on screen"));
    summary_->setTextFormat(Qt::RichText);
    // One line does not hold the volume and image-file figures at the default width: wrap
    // rather than cut them off.
    summary_->setWordWrap(true);

    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Volume")));
    bar->addWidget(volume_box_, 1);
    bar->addWidget(new QLabel(tr("Map")));
    bar->addWidget(state_box_);
    bar->addWidget(new QLabel(tr("Colour by")));
    bar->addWidget(mode_box_);
    bar->addWidget(new QLabel(tr("Clusters/cell")));
    bar->addWidget(zoom_box_);
    bar->addWidget(pixels_box_);

    auto* scroll = new QScrollArea;
    scroll->setWidget(map_);
    scroll->setWidgetResizable(true);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    auto* map_box = new QWidget;
    auto* map_layout = new QVBoxLayout(map_box);
    map_layout->setContentsMargins(0, 0, 0, 0);
    verdict_->setObjectName(QStringLiteral("verdictBanner"));
    verdict_->setWordWrap(true);
    verdict_->setVisible(false);
    map_layout->addWidget(verdict_);
    map_layout->addWidget(summary_);
    map_layout->addWidget(scroll, 1);
    map_layout->addWidget(legend_);

    auto* top = new QSplitter(Qt::Horizontal);
    top->addWidget(map_box);
    // Scrolled, so that the map's side can be made short when a chart tab wants the height.
    auto* plan_scroll = new QScrollArea;
    plan_scroll->setWidget(plan_panel_);
    plan_scroll->setWidgetResizable(true);
    plan_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    plan_scroll->setFrameShape(QFrame::NoFrame);
    plan_scroll->setMinimumWidth(300);
    top->addWidget(plan_scroll);
    top->setStretchFactor(0, 3);
    top->setStretchFactor(1, 1);
    top->setSizes({kWindowSize.width() - 360, 360});

    files_proxy_->setSourceModel(files_);
    files_proxy_->setSortRole(FilesModel::kSortRole);
    files_proxy_->setFilterRole(FilesModel::kSortRole);  // the model's path cache, not a path per row
    files_proxy_->setFilterKeyColumn(FilesModel::Path);
    files_proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
    files_view_->setModel(files_proxy_);
    files_view_->setSortingEnabled(true);
    files_view_->sortByColumn(FilesModel::Fragments, Qt::DescendingOrder);
    files_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    files_view_->setSelectionMode(QAbstractItemView::SingleSelection);
    files_view_->verticalHeader()->setVisible(false);
    files_view_->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 4);
    files_view_->horizontalHeader()->setSectionResizeMode(FilesModel::Path, QHeaderView::Stretch);
    filter_->setPlaceholderText(tr("Filter by path"));
    filter_->setClearButtonEnabled(true);
    auto* files_page = new QWidget;
    auto* files_layout = new QVBoxLayout(files_page);
    files_layout->addWidget(filter_);
    files_layout->addWidget(files_view_);

    warnings_view_->setModel(warnings_);
    warnings_view_->verticalHeader()->setVisible(false);
    warnings_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    warnings_view_->horizontalHeader()->setSectionResizeMode(WarningsModel::Message, QHeaderView::Stretch);
    warnings_view_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    warnings_view_->setWordWrap(true);
    // The plan's own IO is part of its impact (docs/impact.md §10): beside the warnings,
    // whose messages wrap, rather than under them, where the tab has no room for its rows.
    auto* impact_split = new QSplitter(Qt::Horizontal);
    impact_split->addWidget(warnings_view_);
    impact_split->addWidget(plan_writes_);
    impact_split->setStretchFactor(0, 1);
    impact_split->setStretchFactor(1, 0);
    impact_split->setSizes({kWindowSize.width() - kPlanWritesWidth, kPlanWritesWidth});
    auto* warnings_page = new QWidget;
    auto* warnings_layout = new QVBoxLayout(warnings_page);
    warnings_layout->addWidget(warnings_note_);
    warnings_layout->addWidget(impact_split, 1);
    warnings_note_->setWordWrap(true);

    tabs_->addTab(files_page, tr("Files"));
    tabs_->addTab(histograms_, tr("IO histograms"));
    tabs_->addTab(warnings_page, tr("Impact"));
    tabs_->addTab(frontier_, tr("Trade-off"));

    auto* split = new QSplitter(Qt::Vertical);
    split->addWidget(top);
    split->addWidget(tabs_);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    split->setSizes({kWindowSize.height() / 2 + 40, kWindowSize.height() / 2 - 40});
    // The charts need height more than the map does: their tabs get three fifths of it (the
    // handle still moves); the other tabs get the split back as it was.
    connect(tabs_, &QTabWidget::currentChanged, this, [this, split](int index) {
        const bool charts = tabs_->widget(index) == histograms_ || tabs_->widget(index) == frontier_;
        if (charts == charts_split_.has_value()) return;
        if (charts) {
            charts_split_ = split->sizes();
            const int total = charts_split_->value(0) + charts_split_->value(1);
            split->setSizes({total * 2 / 5, total - total * 2 / 5});
        } else {
            split->setSizes(*charts_split_);
            charts_split_.reset();
        }
    });

    auto* central = new QWidget;
    auto* layout = new QVBoxLayout(central);
    layout->addLayout(bar);
    layout->addWidget(split, 1);

    // Choosing a volume weighs it; its first plan follows the verdict (weigh_volume).
    connect(volume_box_, &QComboBox::currentIndexChanged, this,
            [this](int index) { choose_volume(index, std::nullopt); });
    connect(state_box_, &QComboBox::currentIndexChanged, this, &MainWindow::show_map);
    connect(tabs_, &QTabWidget::currentChanged, this, &MainWindow::assess_tab);
    connect(mode_box_, &QComboBox::currentIndexChanged, this, [this](int index) {
        map_->set_mode(index == 1 ? MapMode::Layers : MapMode::Allocation);
        legend_->set_entries(legend_entries(map_->mode(), map_->cells(), map_->layer_cells()));
    });
    connect(zoom_box_, &QSpinBox::valueChanged, this,
            [this](int value) { map_->set_clusters_per_cell(value); });
    connect(pixels_box_, &QSpinBox::valueChanged, map_, &ClusterMapWidget::set_cell_pixels);
    connect(map_, &ClusterMapWidget::streamClicked, this, [this](std::size_t stream) {
        // Show the clicked file in the table (clearing a filter that hides it).
        QModelIndex row = files_proxy_->mapFromSource(files_->index(static_cast<int>(stream), 0));
        if (!row.isValid()) {
            filter_->clear();
            row = files_proxy_->mapFromSource(files_->index(static_cast<int>(stream), 0));
        }
        tabs_->setCurrentIndex(0);
        files_view_->setCurrentIndex(row);
        files_view_->scrollTo(row);
    });
    connect(filter_, &QLineEdit::textChanged, files_proxy_, &QSortFilterProxyModel::setFilterFixedString);
    connect(files_view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) {
                if (!current.isValid()) return map_->highlight_stream(std::nullopt);
                const QModelIndex source = files_proxy_->mapToSource(current);
                map_->highlight_stream(static_cast<std::size_t>(source.row()));
            });
    return central;
}

void MainWindow::set_strategy(const std::string& name) { plan_panel_->set_strategy(name); }

void MainWindow::set_tab(const std::string& name) {
    tabs_->setCurrentIndex(name == "histograms"                     ? 1
                           : name == "impact" || name == "warnings" ? 2
                           : name == "trade-off"                    ? 3
                                                                    : 0);
}

std::unique_ptr<QDialog> MainWindow::settings_dialog(const std::string& name) {
    if (name == "apply") return apply_dialog();
    if (name == "compact") return compact_dialog();
    if (name == "storage") return storage_dialog();
    return nullptr;
}

void MainWindow::set_map_mode(const std::string& name) {
    mode_box_->setCurrentIndex(name == "layers" ? 1 : 0);
}

bool MainWindow::busy() const { return job_->running(); }

void MainWindow::cancel() { job_->cancel(); }

std::size_t MainWindow::volume_index() const {
    return static_cast<std::size_t>(std::max(0, volume_box_->currentIndex()));
}

// ---- opening and analysing ----

void MainWindow::choose_image() {
    QSettings settings;
    const QString start = QFileInfo(settings.value(kRecentKey).toStringList().value(0)).absolutePath();
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open disk image"), start,
        tr("Disk images (*.img *.raw *.vmdk *.vhd *.vhdx *.qcow2 *.qcow);;All files (*)"));
    if (!path.isEmpty()) open_image(path);
}

void MainWindow::choose_uri() {
    bool ok = false;
    const QString uri =
        QInputDialog::getText(this, tr("Open image on an NBD server"),
                              tr("NBD URI (nbd://HOST/EXPORT, nbd+unix:///EXPORT?socket=PATH, nbds://… for TLS):"),
                              QLineEdit::Normal, QStringLiteral("nbd+unix:///?socket="), &ok)
            .trimmed();
    if (!ok || uri.isEmpty()) return;
    if (!is_nbd_uri(uri.toStdString())) {
        QMessageBox::warning(this, tr("guestfrag"),
                             tr("%1 is not an NBD URI (nbd://, nbds://, nbd+unix://, nbds+unix://).").arg(uri));
        return;
    }
    open_image(uri);
}

void MainWindow::open_image(const QString& path, const std::vector<ParentOverride>& parents) {
    verdict_job_->cancel();  // the verdict on the image shown before
    verdict_->setVisible(false);
    image_path_ = path;
    parents_ = parents;
    opened_ = {};
    plan_.reset();
    before_cells_.reset();
    after_cells_.reset();
    files_->set_volume(nullptr);
    warnings_->set_warnings({});
    plan_writes_->show_result(nullptr);
    histograms_->show_result(nullptr);
    plan_panel_->show_result(nullptr, nullptr);
    frontier_->show_result(nullptr);
    map_->show_volume(nullptr, nullptr, false);
    summary_->clear();
    {
        const QSignalBlocker block(volume_box_);
        volume_box_->clear();
    }
    setWindowTitle(QStringLiteral("%1 — guestfrag").arg(qstr(location_file_name(path.toStdString()))));
    job_started(tr("Reading %1…").arg(path));
    const std::string image = path.toStdString();
    struct Opened {
        OpenedImage image;
        MapCells first;  // the first volume's map cells, built off the GUI thread too
    };
    job_->start<Opened>(
        [image, parents](const Progress& progress) {
            Opened out;
            out.image = open_and_analyze(image, OpenOptions{{}, parents}, std::nullopt, progress);
            if (!out.image.analysis->volumes.empty()) out.first = volume_cells(out.image, 0);
            return out;
        },
        [this](Opened opened) {
            job_ended();
            opened_ = std::move(opened.image);
            if (interactive_) remember_recent(image_path_);
            plan_panel_->suggest_strategy(
                recommended_strategy(opened_.analysis->layers, opened_.analysis->virtual_size));
            show_analysis(std::move(opened.first));  // weighs the first volume, then plans it
            emit analysisFinished();
        },
        [this](const Error& error) {
            job_ended();
            if (interactive_ && offer_parent(error)) return;
            report_error(image_path_, error);
        });
}

void MainWindow::show_analysis(MapCells first) {
    const QSignalBlocker block(volume_box_);
    volume_box_->clear();
    for (const VolumeAnalysis& v : opened_.analysis->volumes)
        volume_box_->addItem(
            tr("Partition %1 — %2 %3, %4 clusters of %5")
                .arg(v.map.partition)
                .arg(qstr(v.map.label).isEmpty() ? tr("(no label)") : qstr(v.map.label))
                .arg(size_text(static_cast<std::uint64_t>(v.map.total_clusters) * v.map.cluster_size))
                .arg(v.map.total_clusters)
                .arg(size_text(v.map.cluster_size)));
    volume_box_->setCurrentIndex(0);
    choose_volume(0, std::move(first));
}

void MainWindow::choose_volume(int index, std::optional<MapCells> view) {
    if (!opened_.analysis || index < 0) return;
    const auto& volumes = opened_.analysis->volumes;
    if (static_cast<std::size_t>(index) >= volumes.size()) return;
    plan_.reset();
    after_cells_.reset();
    {
        const QSignalBlocker block(state_box_);
        state_box_->setCurrentIndex(0);
    }
    state_box_->setEnabled(false);
    // Another volume picked by hand is built here; the first one came from the worker.
    if (!view) view = volume_cells(opened_, static_cast<std::size_t>(index));
    before_cells_ = std::move(*view);
    files_->set_volume(before_cells_->volume);
    files_view_->resizeColumnsToContents();
    files_view_->horizontalHeader()->setSectionResizeMode(FilesModel::Path, QHeaderView::Stretch);
    warnings_->set_warnings({});
    warnings_note_->clear();
    weighed_.reset();
    plan_panel_->show_judgement({});
    plan_writes_->show_result(nullptr);
    histograms_->show_result(nullptr);
    plan_panel_->show_result(nullptr, nullptr);
    frontier_->show_result(nullptr);
    map_->show_cells(*before_cells_);  // a new volume starts at its default zoom
    update_summary();
    update_actions_enabled();
    weigh_volume(static_cast<std::size_t>(index));
}

void MainWindow::weigh_volume(std::size_t volume) {
    // The banner says what it is in words and a sign; its colours (blue, amber, grey) differ
    // in lightness too, so no reader depends on hue.
    const auto show = [this](const QString& text, const char* background) {
        verdict_->setText(text);
        verdict_->setStyleSheet(
            QStringLiteral("QLabel { background: %1; color: black; border: 1px solid #555; padding: 6px; }")
                .arg(QLatin1String(background)));
        verdict_->setVisible(true);
    };
    show(tr("Verdict: weighing every plan against no action…"), "#eeeeee");
    VerdictOptions rule;
    rule.models = models_;
    verdict_job_->start<VolumeVerdict>(
        [opened = opened_, volume, rule](const Progress& progress) {
            return decide_volume(opened, volume, rule, progress);
        },
        [this, show](VolumeVerdict weighed) {
            if (!weighed.verdict) {
                show(tr("● %1.").arg(qstr(weighed.reason())), "#e0e0e0");
                emit verdictShown();
                if (!plan_) run_plan();
                return;
            }
            weighed_ = std::make_shared<const Verdict>(std::move(*weighed.verdict));
            const Verdict& v = *weighed_;
            if (!v.chosen) {
                show(tr("● No action: %1.").arg(qstr(v.reason)), "#e0e0e0");
            } else {
                const WeighedPlan& p = v.plans[*v.chosen];
                const double saved = on_device(p.saved, v.device);
                const QString plan =
                    qstr(strategy_name(p.options.strategy)) +
                    (p.planned.plan.order.empty() ? QString() : QStringLiteral(" --order ") + qstr(p.planned.plan.order));
                QString buys = tr("%1 %2 s → %3 s on the %4 model (−%5 %); moves %6")
                                         .arg(qstr(v.workload.text()))
                                         .arg(v.now_seconds, 0, 'f', 2)
                                         .arg(v.now_seconds - saved, 0, 'f', 2)
                                         .arg(qstr(device_name(v.device)))
                                         .arg(v.now_seconds > 0 ? 100 * saved / v.now_seconds : 0, 0, 'f', 0)
                                         .arg(size_text(p.planned.plan.summary.moved_bytes));
                if (p.growth_bytes > 0) buys += tr(", grows the disk by %1").arg(size_text(p.growth_bytes));
                if (p.freed_bytes > 0)
                    buys += tr(" (%1 net once reclaimed)").arg(size_text(p.net_growth_bytes()));
                // The cost the rule weighs against the gain (docs/verdict.md §2).
                buys += tr(", storage work %1 s once").arg(on_device(p.storage_work(), v.device), 0, 'f', 2);
                if (v.blockers.empty())
                    show(tr("✔ Defragment with %1: %2; can run offline now.").arg(plan, buys), "#cfe3ff");
                else
                    show(tr("⚠ Defragment with %1 once unblocked: %2. Blocked: %3")
                             .arg(plan, buys, qstr(v.blockers.front())),
                         "#ffd98a");
                (void)plan_panel_->adopt_verdict_plan(p.options.strategy, p.planned.plan.order);
            }
            emit verdictShown();
            // The volume's first plan is the verdict's, unless the user chose another; one
            // planned by hand meanwhile stays.
            if (plan_)
                show_judgement();
            else
                run_plan();
        },
        [this, show](const Error& error) {
            if (error.kind() == ErrorKind::Cancelled) return;
            show(QObject::tr("Verdict: could not be weighed: %1").arg(qstr(error.what())), "#e0e0e0");
            if (!plan_) run_plan();
        });
}

void MainWindow::show_map() {
    if (!before_cells_) return;
    const bool after = state_box_->currentIndex() == 1 && after_cells_;
    const MapCells& wanted = after ? *after_cells_ : *before_cells_;
    // Cells built ahead (on the worker) are used when they are at the zoom shown now.
    if (wanted.cells.clusters_per_cell() == map_->clusters_per_cell() || !map_->cells().size())
        map_->show_cells(wanted);
    else
        map_->show_volume(wanted.volume, wanted.layers, true);
    if (const QModelIndex current = files_view_->currentIndex(); current.isValid())
        map_->highlight_stream(static_cast<std::size_t>(files_proxy_->mapToSource(current).row()));
}

void MainWindow::update_summary() {
    if (!opened_.analysis) return summary_->clear();
    const ImageAnalysis& a = *opened_.analysis;
    const VolumeAnalysis& v = a.volumes.at(volume_index());
    QString text = tr("<b>%1</b> · %2 · %3 layer(s) · %4 files, %5 fragmented (%6%) · free %7 in %8 extents, "
                      "free space fragmentation %9%")
                       .arg(qstr(location_file_name(a.path)).toHtmlEscaped(), qstr(format_name(a.format)))
                       .arg(a.layers.size())
                       .arg(v.files.files)
                       .arg(v.files.fragmented_files)
                       .arg(v.files.fragmentation_percent, 0, 'f', 1)
                       .arg(size_text(v.free_space.free_clusters * v.map.cluster_size))
                       .arg(v.free_space.extents)
                       .arg(v.free_space.fragmentation_percent, 0, 'f', 1);
    // Where the image file keeps this volume's data (docs/metrics.md §6): NTFS can be
    // contiguous while the .qcow2/.vmdk holds it out of order.
    if (!v.layers.empty()) {
        const HostLayout& h = v.layers.front().host;
        text += tr(" · in the image file: %1 extents, %2 seeks (%3 backward), %4% fragmented")
                    .arg(h.extents)
                    .arg(h.seeks)
                    .arg(h.backward_seeks)
                    .arg(h.fragmentation_percent, 0, 'f', 1);
    }
    // What a full copy (clone, deploy, migration) costs the array now and re-laid (docs/copy.md).
    if (const OffloadFigures* o = reference_offload(a.copy.chain)) {
        text += tr(" · a full copy: %1 offload commands at %2, %3 re-laid")
                    .arg(o->commands)
                    .arg(size_text(o->transfer_size))
                    .arg(o->relaid_commands);
        for (const CopyWarning& w : a.copy.warnings)
            text += QStringLiteral("<br><b>%1</b>: %2").arg(qstr(w.code), qstr(w.message).toHtmlEscaped());
    }
    summary_->setText(text);
}

// ---- planning ----

void MainWindow::run_plan() {
    if (!opened_.analysis || opened_.analysis->volumes.empty()) return;
    QString problem;
    std::optional<PlanRequest> request = plan_panel_->request(&problem);
    if (!request) {
        if (interactive_)
            QMessageBox::warning(this, tr("Plan"), problem);
        else
            emit failed(image_path_, problem, 1);
        return;
    }
    request->impact.models = models_;
    request->provisioning = storage_.provisioning;
    request->zero_block = storage_.zero_block;
    const std::size_t volume = volume_index();
    job_started(tr("Planning partition %1…").arg(opened_.analysis->volumes[volume].map.partition));
    plan_panel_->set_busy(true);
    struct Planned {
        PlanResult result;
        MapCells after;
    };
    const std::int64_t zoom = map_->clusters_per_cell();
    job_->start<Planned>(
        [opened = opened_, volume, request = *request, zoom](const Progress& progress) {
            Planned out;
            out.result = plan_for_window(opened, volume, request, progress);
            std::shared_ptr<const std::vector<Layer>> layers(opened.analysis, &opened.analysis->layers);
            out.after = MapCells::compute(out.result.after, std::move(layers), zoom);
            return out;
        },
        [this](Planned planned) {
            job_ended();
            plan_ = std::make_shared<PlanResult>(std::move(planned.result));
            after_cells_ = std::move(planned.after);
            show_plan();
            // The figures of the tab in view come next; the others when their tab is shown.
            assess(tab_figures(), [this] { emit planFinished(); });
        },
        [this](const Error& error) {
            job_ended();
            report_error(image_path_, error);
        });
}

void MainWindow::show_plan() {
    const VolumeAnalysis& v = opened_.analysis->volumes.at(plan_->volume);
    plan_panel_->show_result(plan_.get(), &v);
    show_figures();
    state_box_->setEnabled(true);
    if (state_box_->currentIndex() == 1) show_map();
    status_->setText(
        tr("Planned %1 moves on partition %2.").arg(plan_->plan.summary.moves).arg(v.map.partition));
    update_actions_enabled();
}

void MainWindow::show_figures() {
    const PlanResult* plan = plan_.get();
    histograms_->show_result(plan);
    frontier_->show_result(plan);
    plan_writes_->show_result(plan);
    // Every column of its table in view; the handle can still widen it.
    plan_writes_->setMinimumWidth(plan_writes_->table_width());
    if (plan == nullptr || !plan->has(Figure::Impact)) {
        warnings_->set_warnings({});
        warnings_note_->clear();
    } else if (plan->impact) {
        warnings_->set_warnings(plan->impact->warnings);
        warnings_note_->setText(plan->impact->warnings.empty() ? tr("The plan raises no storage warnings.")
                                                               : tr("Storage impact of the plan, most severe first."));
    } else {
        warnings_->set_warnings({});
        warnings_note_->setText(tr("Storage impact not available: %1").arg(QString::fromStdString(plan->impact_error)));
    }
    show_judgement();
}

void MainWindow::show_judgement() {
    if (!plan_) return plan_panel_->show_judgement({});
    const Plan& shown = plan_->plan;
    // The verdict weighed each strategy with its default settings: the plan shown is one of
    // them when it makes the same moves.
    std::optional<std::size_t> match;
    if (weighed_)
        for (std::size_t i = 0; i < weighed_->plans.size() && !match; ++i) {
            const Plan& w = weighed_->plans[i].planned.plan;
            if (w.strategy == shown.strategy && w.order == shown.order &&
                w.summary.moves == shown.summary.moves && w.summary.moved_bytes == shown.summary.moved_bytes)
                match = i;
        }
    QString text;
    const std::vector<ImpactWarning>* warnings = plan_->impact ? &plan_->impact->warnings : nullptr;
    if (!weighed_) {
        // Not weighed (yet, or the verdict failed, as its banner says): its warnings only.
    } else if (!match) {
        text =
            tr("Verdict: this plan was not weighed (its settings differ from the defaults); the "
               "IO histograms tab has its estimate.");
    } else {
        const WeighedPlan& p = weighed_->plans[*match];
        const QString device = qstr(device_name(weighed_->device));
        if (weighed_->chosen == match)
            text = tr("✔ The verdict's plan (the banner says what it buys).");
        else if (!p.rejected.empty())
            text = tr("✖ Not recommended: %1 (%2 on the %3 model).")
                       .arg(qstr(p.rejected), qstr(weighed_->workload.text()), device);
        else
            text = tr("○ Worth running, but saves less than the verdict's plan.");
        warnings = &p.impact.warnings;
    }
    if (warnings != nullptr && !warnings->empty()) {
        QStringList codes;
        for (const ImpactWarning& w : *warnings) codes << qstr(w.code);
        if (!text.isEmpty()) text += QLatin1Char('\n');
        text += tr("Warnings: %1 (Impact tab).").arg(codes.join(QStringLiteral(", ")));
    }
    plan_panel_->show_judgement(text);
}

Figures MainWindow::tab_figures() const {
    switch (tabs_->currentIndex()) {
        case 1:
            return only(Figure::Estimate);
        case 2:
            return only(Figure::Impact);
        case 3:
            return only(Figure::Frontier);
        default:
            return 0;
    }
}

void MainWindow::assess(Figures wanted, std::function<void()> then) {
    const std::shared_ptr<const PlanResult> plan = plan_;
    const Figures missing = plan ? plan->missing(wanted) : 0;
    if (missing == 0) return then();
    job_started(includes(missing, Figure::Estimate) ? tr("Estimating the workload…")
                : includes(missing, Figure::Impact) ? tr("Assessing the storage impact…")
                                                    : tr("Replaying the plan's trade-off…"));
    job_->start<PlanFigures>(
        [opened = opened_, plan, missing](const Progress& progress) {
            return assess_plan(opened, *plan, missing, progress);
        },
        [this, plan, then = std::move(then)](PlanFigures figures) {
            job_ended();
            if (plan != plan_) return;  // not the plan shown any more
            plan_->merge(std::move(figures));
            show_figures();
            then();
            assess_tab();  // another tab may have been shown meanwhile
        },
        [this](const Error& error) {
            job_ended();
            report_error(image_path_, error);
        });
}

void MainWindow::assess_tab() {
    if (!plan_ || job_->running() || plan_->missing(tab_figures()) == 0) return;
    assess(tab_figures(), [this] { emit figuresFinished(); });
}

// ---- jobs, progress and errors ----

void MainWindow::job_started(const QString& what) {
    status_->setText(what);
    progress_->setRange(0, 0);
    progress_->setVisible(true);
    cancel_->setVisible(true);
    progress_timer_->start();
    update_actions_enabled();
}

void MainWindow::job_ended() {
    progress_timer_->stop();
    progress_->setVisible(false);
    cancel_->setVisible(false);
    plan_panel_->set_busy(false);
    status_->clear();
    update_actions_enabled();
}

void MainWindow::update_progress() {
    const std::uint64_t total = job_->total();
    if (total == 0) {
        progress_->setRange(0, 0);  // busy indicator until the first report
        return;
    }
    progress_->setRange(0, 1000);
    progress_->setValue(static_cast<int>(std::min<std::uint64_t>(job_->done(), total) * 1000 / total));
}

void MainWindow::report_error(const QString& image, const Error& error) {
    const QString reason = QString::fromStdString(error.what());
    if (error.kind() == ErrorKind::Cancelled) {
        status_->setText(tr("Cancelled."));
        if (!interactive_) emit failed(image, reason, 2);
        return;
    }
    status_->setText(tr("Error: %1").arg(reason));
    if (interactive_)
        QMessageBox::critical(this, tr("guestfrag"), QStringLiteral("%1:\n%2").arg(image, reason));
    emit failed(image, reason, error.kind() == ErrorKind::Internal ? 3 : 2);
}

bool MainWindow::offer_parent(const Error& error) {
    const auto* missing = dynamic_cast<const MissingParentError*>(&error);
    if (missing == nullptr || (!is_nbd_uri(image_path_.toStdString()) && !QFileInfo::exists(image_path_)))
        return false;
    const QString reason = QString::fromStdString(error.what());
    const auto answer = QMessageBox::question(this, tr("Parent image missing"),
                                              tr("%1\n\nChoose the parent image file?").arg(reason),
                                              QMessageBox::Open | QMessageBox::Cancel, QMessageBox::Open);
    if (answer != QMessageBox::Open) return false;
    const QString parent =
        QFileDialog::getOpenFileName(this, tr("Parent image"), QFileInfo(image_path_).absolutePath());
    if (parent.isEmpty()) return false;
    // The file is the parent at the missing depth, under the name its child records (so a
    // renamed copy is taken); the parents given before keep their places.
    std::vector<ParentOverride> parents = parents_;
    parents.push_back({missing->depth(), missing->recorded(), parent.toStdString()});
    open_image(image_path_, parents);
    return true;
}

// ---- writing a new disk (apply, compact) ----

bool MainWindow::writing() const { return apply_job_->running() || compact_job_->running(); }

void MainWindow::update_actions_enabled() {
    // The progress timer runs from job_started to job_ended: an image or a plan being
    // replaced is not offered, even in the moment before its job starts.
    const bool idle = !job_->running() && !progress_timer_->isActive() && !writing();
    const bool can_apply = idle && plan_ && !plan_->plan.moves.empty();
    apply_action_->setEnabled(can_apply);
    plan_panel_->set_apply_enabled(can_apply);
    // Compaction makes its own packing plans: the plan shown plays no part.
    compact_action_->setEnabled(idle && opened_.analysis && !opened_.analysis->volumes.empty());
}

void MainWindow::follow(NewDiskProgressDialog* dialog, BackgroundJob* job, const QString& output,
                        std::vector<ParentOverride> parents) {
    dialog->setWindowModality(Qt::WindowModal);
    connect(dialog, &NewDiskProgressDialog::cancelRequested, job, &BackgroundJob::cancel);
    connect(dialog, &NewDiskProgressDialog::openRequested, this,
            [this, output, parents = std::move(parents)] { open_image(output, parents); });
    dialog->show();
}

// ---- recent files, drag and drop ----

void MainWindow::remember_recent(const QString& path) {
    QSettings settings;
    QStringList recent = settings.value(kRecentKey).toStringList();
    const QString absolute = is_nbd_uri(path.toStdString()) ? path : QFileInfo(path).absoluteFilePath();
    recent.removeAll(absolute);
    recent.prepend(absolute);
    while (recent.size() > kRecentFiles) recent.removeLast();
    settings.setValue(kRecentKey, recent);
    rebuild_recent_menu();
}

void MainWindow::rebuild_recent_menu() {
    recent_menu_->clear();
    if (!interactive_) return;
    const QStringList recent = QSettings().value(kRecentKey).toStringList();
    for (const QString& path : recent)
        recent_menu_->addAction(path, this, [this, path] { open_image(path); });
    recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls() && event->mimeData()->urls().value(0).isLocalFile())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    const QList<QUrl> urls = event->mimeData()->urls();
    if (urls.isEmpty() || !urls.front().isLocalFile()) return;
    event->acceptProposedAction();
    open_image(urls.front().toLocalFile());
}

}  // namespace guestfrag::gui
