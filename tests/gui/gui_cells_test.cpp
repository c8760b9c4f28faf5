// SPDX-License-Identifier: GPL-2.0-or-later
// The cluster map's counting classes against the core's VolumeMap, headless: an independent
// per-cluster classification (a plain array, no interval sets) is the oracle.
#include <array>
#include <vector>

#include <QtTest>

#include "analyzers/analysis.hpp"
#include "app/gui/cluster_cells.hpp"
#include "app/gui/extent_index.hpp"
#include "core/image/open_image.hpp"
#include "gui_image.hpp"

using namespace guestfrag;
using namespace guestfrag::gui;

namespace {

/// Every cluster's state by brute force, in the precedence CellState documents.
std::vector<CellState> oracle_states(const VolumeMap& m) {
    std::vector<CellState> state(static_cast<std::size_t>(m.total_clusters), CellState::Metadata);
    for (const auto& free : m.free)
        for (std::int64_t c = free.lower(); c < free.upper(); ++c)
            state[static_cast<std::size_t>(c)] = boost::icl::contains(m.mft_zone, c) ? CellState::MftZone : CellState::Free;
    // Lowest precedence first, so that later (stronger) states overwrite.
    auto paint = [&](auto&& wanted, CellState as) {
        for (const Stream& s : m.streams) {
            if (!wanted(s)) continue;
            for (const Extent& e : s.extents)
                if (e.lcn != Extent::kSparse)
                    for (std::int64_t c = e.lcn; c < e.lcn + e.clusters && c < m.total_clusters; ++c)
                        state[static_cast<std::size_t>(c)] = as;
        }
    };
    auto is_mft = [](const Stream& s) { return s.mft_record == 0 && s.type == 0x80 && s.name.empty(); };
    paint([&](const Stream& s) { return !is_mft(s) && s.placement == Placement::Movable && s.fragments() <= 1; },
          CellState::Contiguous);
    paint([&](const Stream& s) { return !is_mft(s) && s.placement == Placement::Movable && s.fragments() > 1; },
          CellState::Fragmented);
    paint([&](const Stream& s) { return !is_mft(s) && s.placement == Placement::Excluded; }, CellState::Excluded);
    paint([&](const Stream& s) { return !is_mft(s) && s.placement == Placement::Unmovable; }, CellState::Metadata);
    for (const auto& pinned : m.unmovable)
        for (std::int64_t c = pinned.lower(); c < pinned.upper() && c < m.total_clusters; ++c)
            state[static_cast<std::size_t>(c)] = CellState::Metadata;
    paint(is_mft, CellState::Mft);
    return state;
}

}  // namespace

class GuiCellsTest : public QObject {
    Q_OBJECT

    std::shared_ptr<const ImageAnalysis> analysis_;

    [[nodiscard]] const VolumeMap& map() const { return analysis_->volumes.front().map; }

private slots:
    void initTestCase() {
        const auto image = open_image(test::gui_test_image().string());
        analysis_ = std::make_shared<const ImageAnalysis>(analyze_image(*image));
        QCOMPARE(analysis_->volumes.size(), std::size_t{1});
        QVERIFY(map().total_clusters > 1000);
    }

    void clustersPerStateMatchOracle() {
        const std::vector<CellState> oracle = oracle_states(map());
        const ClusterCells cells(map(), 1);
        QCOMPARE(cells.size(), static_cast<std::size_t>(map().total_clusters));
        for (std::size_t c = 0; c < oracle.size(); ++c)
            if (cells.state(c) != oracle[c])
                QFAIL(qPrintable(QStringLiteral("cluster %1: %2, oracle %3")
                                     .arg(c)
                                     .arg(static_cast<int>(cells.state(c)))
                                     .arg(static_cast<int>(oracle[c]))));
        // And against the core's own figures.
        QCOMPARE(cells.units_in(CellState::Free) + cells.units_in(CellState::MftZone), map().free_clusters());
        const auto mft = std::find_if(map().streams.begin(), map().streams.end(),
                                      [](const Stream& s) { return s.mft_record == 0 && s.label() == "$DATA"; });
        QVERIFY(mft != map().streams.end());
        QCOMPARE(cells.units_in(CellState::Mft), mft->allocated_clusters());
        QVERIFY(cells.units_in(CellState::Fragmented) > 0);
        QVERIFY(cells.units_in(CellState::Contiguous) > 0);
        std::int64_t sum = 0;
        for (std::size_t i = 0; i < kCellStates; ++i) sum += cells.units_in(static_cast<CellState>(i));
        QCOMPARE(sum, map().total_clusters);
    }

    void cellsTakeTheDominantState() {
        const std::vector<CellState> oracle = oracle_states(map());
        for (const std::int64_t per_cell : {7, 64, 1000}) {
            const ClusterCells cells(map(), per_cell);
            const auto expected_cells = static_cast<std::size_t>((map().total_clusters + per_cell - 1) / per_cell);
            QCOMPARE(cells.size(), expected_cells);
            std::array<std::size_t, kCellStates> per_state{};
            for (std::size_t cell = 0; cell < cells.size(); ++cell) {
                std::array<std::int64_t, kCellStates> counts{};
                const auto [first, end] = cells.cluster_range(cell);
                for (std::int64_t c = first; c < end; ++c) ++counts[static_cast<std::size_t>(oracle[static_cast<std::size_t>(c)])];
                const auto best = static_cast<std::size_t>(std::max_element(counts.begin(), counts.end()) - counts.begin());
                QCOMPARE(static_cast<std::size_t>(cells.state(cell)), best);
                ++per_state[best];
            }
            for (std::size_t i = 0; i < kCellStates; ++i) QCOMPARE(cells.cells_in(static_cast<CellState>(i)), per_state[i]);
        }
    }

    void layerCellsMatchTheLayerMap() {
        const VolumeMap& m = map();
        const LayerCells cells(m, analysis_->layers, 16);
        const auto first = m.partition_offset;
        const auto end = first + static_cast<std::uint64_t>(m.total_clusters) * m.cluster_size;
        ByteSet volume;
        volume += boost::icl::interval<std::uint64_t>::right_open(first, end);
        const auto top = static_cast<std::int64_t>(boost::icl::length(analysis_->layers.front().allocated & volume));
        QCOMPARE(cells.units_in(LayerState::TopLayer), top);
        QCOMPARE(cells.units_in(LayerState::ParentLayer), std::int64_t{0});  // a raw disk has no parent
        QCOMPARE(cells.units_in(LayerState::TopLayer) + cells.units_in(LayerState::Unallocated),
                 static_cast<std::int64_t>(end - first));
        QCOMPARE(cells.size(), static_cast<std::size_t>((m.total_clusters + 15) / 16));
    }

    void extentIndexFindsTheOwners() {
        const VolumeMap& m = map();
        const ExtentIndex index(m);
        std::size_t checked = 0;
        for (std::size_t i = 0; i < m.streams.size() && checked < 200; ++i) {
            for (const Extent& e : m.streams[i].extents) {
                if (e.lcn == Extent::kSparse) continue;
                const auto owners = index.streams_in(e.lcn, e.lcn + 1, 10);
                QCOMPARE(owners.size(), std::size_t{1});
                QCOMPARE(owners.front(), i);
                ++checked;
            }
        }
        QVERIFY(checked > 50);
        QVERIFY(index.streams_in(0, m.total_clusters, 5).size() == 5);
    }

    void zeroClustersPerCellIsRefused() {
        QVERIFY_THROWS_EXCEPTION(Error, ClusterCells(map(), 0));
    }
};

QTEST_GUILESS_MAIN(GuiCellsTest)
#include "gui_cells_test.moc"
