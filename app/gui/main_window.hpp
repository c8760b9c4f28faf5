// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <QMainWindow>
#include <QSize>

#include "app/gui/session.hpp"
#include "app/gui/storage_settings.hpp"
#include "app/gui/volume_view.hpp"
#include "core/image/open_chain.hpp"

class QAction;
class QComboBox;
class QDialog;
class QLabel;
class QLineEdit;
class QMenu;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QSpinBox;
class QTabWidget;
class QTableView;
class QTimer;

namespace guestfrag {
struct Verdict;
}

namespace guestfrag::gui {

class ApplyDialog;
class ApplyProgressDialog;
struct ApplyRequest;
class BackgroundJob;
class ClusterMapWidget;
class CompactDialog;
class CompactProgressDialog;
struct CompactRequest;
class FilesModel;
class FrontierChart;
class HistogramPanel;
class MapLegend;
class NewDiskProgressDialog;
class PlanPanel;
class PlanWritesPanel;
class StorageDialog;
class WarningsModel;

/// Size of the window in --screenshot mode (and its default size).
inline constexpr QSize kWindowSize{1280, 860};

/// The main window: opens an image, analyses it and plans its volumes on a worker thread,
/// and shows the results in the cluster map, files table, plan panel, histograms,
/// warnings and trade-off chart, carries a plan out on a copy (File ▸ Apply plan to a copy)
/// and compacts the image into a new one (File ▸ Compact to a new image). Plans are
/// estimated and assessed on the storage of Settings ▸ Storage model. In
/// non-interactive mode (--screenshot, tests) it opens no dialog of its own accord (only the
/// ones an action asks for) and neither reads nor writes its settings (recent files, storage
/// model); failures are reported through failed().
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(bool interactive, QWidget* parent = nullptr);
    ~MainWindow() override;

    /// Opens and analyses `path` (with `parents` given instead of recorded ones, as
    /// open_chain takes them), then plans its first volume with the plan panel's settings.
    void open_image(const QString& path, const std::vector<ParentOverride>& parents = {});
    void set_strategy(const std::string& name);
    /// --device-model FILE: `path` in place of the storage model's device model file for this
    /// run (not remembered), then plans the shown volume again. Returns false, changing
    /// nothing, with the one-line reason (starting with the file) in `error` when the file is
    /// not a device model.
    bool set_device_model(const std::string& path, QString* error = nullptr);
    /// "files", "histograms", "impact" (the warnings and the plan's own IO; its older
    /// name "warnings" too) or "trade-off".
    void set_tab(const std::string& name);
    /// "allocation" or "layers".
    void set_map_mode(const std::string& name);

    /// Asks the running analysis or plan to stop (as the Cancel button does).
    void cancel();

    /// The settings dialog a menu entry opens, not yet shown: "apply" (File ▸ Apply plan to
    /// a copy), "compact" (File ▸ Compact to a new image) or "storage" (Settings ▸ Storage
    /// model); nullptr while its entry cannot be used (no plan with moves, no NTFS volume).
    [[nodiscard]] std::unique_ptr<QDialog> settings_dialog(const std::string& name);

    /// Carries the shown plan out on a copy (pipeline apply_to_copy) on a worker thread and
    /// shows its progress, then its outcome, in apply_progress(). Returns false without
    /// starting, with the reason in `refusal`, when there is no plan with moves, other work
    /// runs, or apply_refusal refuses the request. applyFinished() follows a start.
    bool apply_to_copy(const ApplyRequest& request, QString* refusal = nullptr);
    /// Compacts the open image into a new one (pipeline compact_to_copy) on a worker thread
    /// and shows its progress, then its outcome, in compact_progress(). Returns false without
    /// starting, with the reason in `refusal`, when no image with an NTFS volume is open,
    /// other work runs, or compact_refusal refuses the request. compactFinished() follows a
    /// start.
    bool compact_to_copy(const CompactRequest& request, QString* refusal = nullptr);
    [[nodiscard]] const OpenedImage& opened() const { return opened_; }
    /// The plan shown, with the figures computed so far (a tab's when it was first shown).
    [[nodiscard]] const PlanResult* plan() const { return plan_.get(); }
    [[nodiscard]] bool busy() const;
    [[nodiscard]] bool applying() const;
    [[nodiscard]] bool compacting() const;
    /// File ▸ Apply plan to a copy: enabled when a plan with moves is shown and nothing runs.
    [[nodiscard]] QAction* apply_action() const { return apply_action_; }
    /// The dialog of the last apply (nullptr before the first).
    [[nodiscard]] ApplyProgressDialog* apply_progress() const { return apply_dialog_; }
    /// File ▸ Compact to a new image: enabled when an image with an NTFS volume is open and
    /// nothing runs (no plan needed).
    [[nodiscard]] QAction* compact_action() const { return compact_action_; }
    /// The dialog of the last compaction (nullptr before the first).
    [[nodiscard]] CompactProgressDialog* compact_progress() const { return compact_dialog_; }
    [[nodiscard]] ClusterMapWidget* cluster_map() const { return map_; }
    [[nodiscard]] FilesModel* files_model() const { return files_; }
    [[nodiscard]] QSortFilterProxyModel* files_proxy() const { return files_proxy_; }
    [[nodiscard]] QTableView* files_view() const { return files_view_; }
    [[nodiscard]] HistogramPanel* histograms() const { return histograms_; }
    [[nodiscard]] WarningsModel* warnings_model() const { return warnings_; }
    /// The Impact tab's "Carrying out the plan" section, beside the warnings.
    [[nodiscard]] PlanWritesPanel* plan_writes() const { return plan_writes_; }
    [[nodiscard]] QLabel* summary() const { return summary_; }
    [[nodiscard]] PlanPanel* plan_panel() const { return plan_panel_; }
    /// The Trade-off tab.
    [[nodiscard]] FrontierChart* frontier() const { return frontier_; }
    /// Settings ▸ Storage model: the dialog of the storage plans are estimated and assessed on.
    [[nodiscard]] QAction* storage_action() const { return storage_action_; }
    /// That storage: an interactive window starts with the one it remembered (without a
    /// device model file that can no longer be read), any other with the defaults.
    [[nodiscard]] const StorageSettings& storage() const { return storage_; }

signals:
    void analysisFinished();
    /// A plan is shown, with the figures of the tab in view (docs/gui.md).
    void planFinished();
    /// The verdict on the volume in view is shown in the banner above the map.
    void verdictShown();
    /// Figures of the shown plan that a tab asked for later are computed and shown.
    void figuresFinished();
    /// Opening, analysing or planning `image` failed with `reason` (one line); `exit_code`
    /// is the CLI's (2 bad input, 3 internal).
    void failed(const QString& image, const QString& reason, int exit_code);
    /// An apply ended (its dialog shows how).
    void applyFinished();
    /// A compaction ended (its dialog shows how).
    void compactFinished();

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void build_menus();
    QWidget* build_central();
    void choose_image();
    /// File ▸ Open URI: an image on an NBD server (docs/nbd.md).
    void choose_uri();
    void choose_volume(int index, std::optional<MapCells> view);
    void run_plan();
    void show_analysis(MapCells first);
    void show_plan();
    /// Computes the figures of `wanted` the plan lacks on the worker (with progress, as
    /// Cancel can stop), shows them and runs `then`; runs `then` at once when none lack.
    void assess(Figures wanted, std::function<void()> then);
    /// Starts computing the figures of the tab in view, unless they are there or work runs
    /// (whose end comes back here).
    void assess_tab();
    [[nodiscard]] Figures tab_figures() const;
    /// Shows the plan's figures in their tabs, empty where not computed yet.
    void show_figures();
    /// The plan panel's line on the plan shown: where the verdict puts it and its warnings.
    void show_judgement();
    /// One File ▸ Export: nothing without a plan, or while work runs and `needed` lacks;
    /// otherwise computes `needed`, asks where, runs `write` there and shows its Error in a
    /// dialog titled `title`.
    void export_to(Figures needed, const QString& title, const QString& default_name, const QString& filter,
                   const std::function<void(const QString&)>& write);
    void show_map();
    void update_summary();
    /// Weighs every plan for the volume in view (docs/verdict.md) on a job of its own, and
    /// shows the verdict above the map.
    void weigh_volume(std::size_t volume);
    void update_progress();
    void job_started(const QString& what);
    void job_ended();
    void report_error(const QString& image, const Error& error);
    bool offer_parent(const Error& error);
    void remember_recent(const QString& path);
    void rebuild_recent_menu();
    void export_plan();
    void export_report();
    void export_charts();
    void load_storage();
    [[nodiscard]] std::unique_ptr<StorageDialog> storage_dialog();
    void choose_storage();
    /// Plans are estimated and assessed on `storage`, whose device models are `models`, from
    /// now on; the shown volume is planned again.
    void use_storage(StorageSettings storage, const DeviceModels& models);
    [[nodiscard]] std::unique_ptr<ApplyDialog> apply_dialog();
    void choose_apply();
    [[nodiscard]] std::unique_ptr<CompactDialog> compact_dialog();
    void choose_compact();
    /// Offers File ▸ Apply and File ▸ Compact (and the plan panel's apply) as what is shown
    /// and running allows.
    void update_actions_enabled();
    /// Apply or compaction running (they write a new disk, one at a time).
    [[nodiscard]] bool writing() const;
    /// Shows `dialog`, window-modal, for the run of `job` that writes `output`: its Cancel
    /// cancels the job, its open button opens `output` with `parents`.
    void follow(NewDiskProgressDialog* dialog, BackgroundJob* job, const QString& output,
                std::vector<ParentOverride> parents);
    [[nodiscard]] std::size_t volume_index() const;

    bool interactive_;
    QString image_path_;
    std::vector<ParentOverride> parents_;
    OpenedImage opened_;
    /// Shared with the work that computes its figures, which may outlive a replaced plan.
    std::shared_ptr<PlanResult> plan_;
    std::optional<MapCells> before_cells_;  ///< the chosen volume's cells, as analysed
    std::optional<MapCells> after_cells_;   ///< its cells after plan_
    StorageSettings storage_;
    DeviceModels models_;  ///< storage_models(storage_)

    BackgroundJob* job_;
    BackgroundJob* apply_job_;    ///< apart from job_: planning never replaces a running apply
    BackgroundJob* compact_job_;  ///< its own job, so that applying() and compacting() tell the runs apart
    ApplyProgressDialog* apply_dialog_ = nullptr;
    CompactProgressDialog* compact_dialog_ = nullptr;
    QAction* apply_action_ = nullptr;
    QAction* compact_action_ = nullptr;
    QAction* storage_action_ = nullptr;
    QTimer* progress_timer_;
    ClusterMapWidget* map_;
    MapLegend* legend_;
    QLabel* summary_;
    BackgroundJob* verdict_job_;  ///< its own job: planning by hand never replaces the verdict
    QLabel* verdict_;             ///< the verdict banner above the map
    /// The verdict on the volume shown, once weighed: every candidate's figures and warnings.
    std::shared_ptr<const Verdict> weighed_;
    QComboBox* volume_box_;
    QComboBox* state_box_;
    QComboBox* mode_box_;
    QSpinBox* zoom_box_;
    QSpinBox* pixels_box_;
    PlanPanel* plan_panel_;
    FilesModel* files_;
    QSortFilterProxyModel* files_proxy_;
    QTableView* files_view_;
    QLineEdit* filter_;
    HistogramPanel* histograms_;
    WarningsModel* warnings_;
    QLabel* warnings_note_;
    QTableView* warnings_view_;
    PlanWritesPanel* plan_writes_;
    FrontierChart* frontier_;
    QTabWidget* tabs_;
    /// The map/tabs split as it was before a chart tab took most of the height.
    std::optional<QList<int>> charts_split_;
    QLabel* status_;
    QProgressBar* progress_;
    QPushButton* cancel_;
    QMenu* recent_menu_ = nullptr;
};

}  // namespace guestfrag::gui
