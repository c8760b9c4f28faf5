// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/batch/fleet.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace guestfrag::batch {

namespace {

// One statement on both engines: each path's newest and oldest successful row and their count
// in one grouping, the volumes' aggregates in one pass of hash joins (a lookup per image was
// four times slower at 100,000 images). Sums are cast back to BIGINT (PostgreSQL's sum of a
// bigint is numeric).
constexpr const char* kImages = R"sql(
WITH last AS (
  SELECT path, max(image_id) AS newest, min(image_id) AS oldest, count(*) AS analyses
  FROM images WHERE status = 'ok' GROUP BY path),
per_image AS (
  SELECT v.image_id, count(*) AS volumes, max(m.fragmentation_percent) AS fragmentation,
         CAST(sum(m.excess_fragments) AS BIGINT) AS excess, CAST(sum(m.reclaimable_bytes) AS BIGINT) AS reclaimable,
         CAST(sum(p.thin_growth_bytes) AS BIGINT) AS growth
  FROM volumes v JOIN metrics m ON m.volume_id = v.volume_id LEFT JOIN plans p ON p.volume_id = v.volume_id
  GROUP BY v.image_id),
per_verdict AS (
  SELECT v.image_id, count(*) AS weighed, count(d.strategy) AS recommended, sum(d.saved_seconds) AS saved,
         sum(d.plan_io_seconds) AS io, sum(coalesce(d.work_seconds, d.plan_io_seconds)) AS work
  FROM volumes v JOIN verdicts d ON d.volume_id = v.volume_id
  GROUP BY v.image_id)
SELECT l.path, coalesce(r.host, ''), coalesce(n.datastore, ''), n.analyzed_at, coalesce(a.volumes, 0),
       coalesce(a.fragmentation, 0), coalesce(a.excess, 0), coalesce(a.reclaimable, 0), a.growth,
       n.copy_commands_4m, n.copy_relaid_commands_4m, l.analyses, coalesce(b.fragmentation, 0),
       coalesce(c.weighed, 0), coalesce(c.recommended, 0), c.saved, c.io, c.work
FROM last l JOIN images n ON n.image_id = l.newest JOIN runs r ON r.run_id = n.run_id
LEFT JOIN per_image a ON a.image_id = l.newest
LEFT JOIN per_image b ON b.image_id = l.oldest
LEFT JOIN per_verdict c ON c.image_id = l.newest
)sql";

constexpr const char* kFailed = R"sql(
SELECT i.path, coalesce(i.error, '') FROM images i
JOIN (SELECT path, max(image_id) AS newest FROM images GROUP BY path) l ON i.image_id = l.newest
WHERE i.status = 'failed' ORDER BY i.path
)sql";

std::optional<std::uint64_t> optional_count(const Statement& s, int column) {
    if (s.is_null(column)) return std::nullopt;
    return static_cast<std::uint64_t>(s.integer(column));
}

/// What the copy of an image at 4 MiB transfers saves when its data is re-laid.
std::uint64_t copy_saving(const FleetImage& i) {
    return i.copy_commands && i.copy_relaid_commands && *i.copy_commands > *i.copy_relaid_commands
               ? *i.copy_commands - *i.copy_relaid_commands
               : 0;
}

double rank_key(const FleetImage& i, FleetRank rank) {
    switch (rank) {
        case FleetRank::Fragmentation:
            return i.fragmentation_percent;
        case FleetRank::Reclaimable:
            return static_cast<double>(i.reclaimable_bytes);
        case FleetRank::Growth:
            return static_cast<double>(i.thin_growth_bytes.value_or(0));
        case FleetRank::Copy:
            return static_cast<double>(copy_saving(i));
        case FleetRank::Gain:
            // The storage work of a plan is never zero (it moves something); no plan ranks
            // below every plan, and an image never weighed below that.
            if (i.recommended()) return *i.seconds_saved / std::max(*i.work_seconds, 1e-9);
            return i.weighed_volumes > 0 ? -1 : -2;
    }
    return 0;
}

std::vector<FleetGroup> group_by(const std::vector<FleetImage>& images, std::string FleetImage::*key) {
    std::map<std::string, FleetGroup> groups;
    for (const FleetImage& i : images) {
        FleetGroup& g = groups[i.*key];
        g.name = i.*key;
        ++g.images;
        g.max_fragmentation_percent = std::max(g.max_fragmentation_percent, i.fragmentation_percent);
        g.mean_fragmentation_percent += i.fragmentation_percent;
        g.excess_fragments += i.excess_fragments;
        g.reclaimable_bytes += i.reclaimable_bytes;
        g.thin_growth_bytes += i.thin_growth_bytes.value_or(0);
        if (i.copy_commands && i.copy_relaid_commands) {
            g.copy_commands += *i.copy_commands;
            g.copy_relaid_commands += *i.copy_relaid_commands;
        }
    }
    std::vector<FleetGroup> out;
    for (auto& [name, g] : groups) {
        g.mean_fragmentation_percent /= static_cast<double>(g.images);
        out.push_back(std::move(g));
    }
    std::sort(out.begin(), out.end(), [](const FleetGroup& a, const FleetGroup& b) {
        return std::tie(b.reclaimable_bytes, a.name) < std::tie(a.reclaimable_bytes, b.name);
    });
    return out;
}

}  // namespace

FleetReport fleet_report(ResultsDb& db, FleetRank rank) {
    FleetReport report;
    Statement s(db.connection(), kImages);
    while (s.step()) {
        FleetImage i;
        i.path = s.text(0);
        i.host = s.text(1);
        i.datastore = s.text(2);
        i.analyzed_at = s.text(3);
        i.volumes = static_cast<std::uint64_t>(s.integer(4));
        i.fragmentation_percent = s.real(5);
        i.excess_fragments = static_cast<std::uint64_t>(s.integer(6));
        i.reclaimable_bytes = static_cast<std::uint64_t>(s.integer(7));
        i.thin_growth_bytes = optional_count(s, 8);
        i.copy_commands = optional_count(s, 9);
        i.copy_relaid_commands = optional_count(s, 10);
        i.analyses = static_cast<std::uint64_t>(s.integer(11));
        i.first_fragmentation_percent = s.real(12);
        i.weighed_volumes = static_cast<std::uint64_t>(s.integer(13));
        i.recommended_volumes = static_cast<std::uint64_t>(s.integer(14));
        if (!s.is_null(15)) i.seconds_saved = s.real(15);
        if (!s.is_null(16)) i.plan_io_seconds = s.real(16);
        if (!s.is_null(17)) i.work_seconds = s.real(17);
        report.images.push_back(std::move(i));
    }
    std::sort(report.images.begin(), report.images.end(), [rank](const FleetImage& a, const FleetImage& b) {
        const double ka = rank_key(a, rank), kb = rank_key(b, rank);
        return ka != kb ? ka > kb : a.path < b.path;
    });
    report.datastores = group_by(report.images, &FleetImage::datastore);
    report.hosts = group_by(report.images, &FleetImage::host);
    Statement failed(db.connection(), kFailed);
    while (failed.step()) report.failed.push_back({failed.text(0), failed.text(1)});
    return report;
}

}  // namespace guestfrag::batch
