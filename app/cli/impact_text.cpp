// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/impact_text.hpp"

#include <string>

#include "app/cli/analysis_text.hpp"
#include "app/cli/columns.hpp"
#include "app/cli/estimate_text.hpp"
#include "app/cli/provisioning_options.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {

namespace {

constexpr std::size_t kNameWidth = 28;

/// "  name  value   more": the value right-aligned in 12 columns, then `more`; a value too
/// long for them (a layout, a provisioning) and `more` wrap at the report's width under
/// where they start.
void row(std::ostream& out, const std::string& name, const std::string& value, const std::string& more = {}) {
    const std::string head = "  " + pad(name, kNameWidth);
    if (value.size() > 12) {
        out << hanging(head, value + (more.empty() ? "" : "; " + more));
        return;
    }
    const std::string left = head + pad(value, 12, true);
    out << (more.empty() ? left + '\n' : hanging(left + "   ", more));
}

std::string ratio(double r) { return fixed(r, 2) + ":1"; }

}  // namespace

void print_impact(std::ostream& out, const Impact& impact, const CopyStates& copy) {
    out << "Storage growth (granule " << format_size(impact.granule_size) << ")\n";
    row(out, "data moved", format_size(impact.moved_bytes));
    row(out, "data written", format_size(impact.written_bytes));
    row(out, "thin growth", format_size(impact.growth.thin_growth_bytes));
    row(out, "clone delta growth", format_size(impact.growth.clone_delta_growth_bytes));
    row(out, "reclaimable now", format_size(impact.reclaimable_bytes_before),
        "after the plan " + format_size(impact.reclaimable_bytes_after));
    if (impact.reclaimable_bytes_before > 0 || impact.reclaimable_bytes_after > 0)
        out << hanging("  reclaim with: ", impact.reclaim_how);

    out << "\nSnapshot / CBT / replication delta\n";
    for (const SnapshotDelta& s : impact.snapshot)
        row(out, s.tracker + " (" + format_size(s.granularity) + ")", format_size(s.bytes));

    out << "\nDeduplication (chunks aligned to disk offset 0)\n";
    const bool deep = !impact.dedup.empty() && impact.dedup.front().deep.has_value();
    out << "  " << pad("chunk", 10) << pad("written", 12, true);
    if (deep)
        out << pad("rewritten", 12, true) << pad("distinct", 12, true) << pad("after", 12, true)
            << pad("ratio", 10, true) << pad("after", 10, true);
    out << '\n';
    for (const DedupFigures& d : impact.dedup) {
        out << "  " << pad(format_size(d.chunk), 10) << pad(std::to_string(d.changed_chunks), 12, true);
        if (d.deep)
            out << pad(std::to_string(d.deep->rewritten_chunks), 12, true)
                << pad(std::to_string(d.deep->unique_before), 12, true)
                << pad(std::to_string(d.deep->unique_after), 12, true) << pad(ratio(d.deep->ratio_before()), 10, true)
                << pad(ratio(d.deep->ratio_after()), 10, true);
        out << '\n';
    }
    if (!deep) out << "  (written: chunks the plan writes into; --deep counts the distinct contents)\n";

    out << "\nVolume Shadow Copy\n";
    if (impact.vss.store_files == 0)
        out << "  no shadow copy stores" << (impact.vss.catalog ? " (the VSS catalog exists)" : "") << '\n';
    else
        out << "  " << impact.vss.store_files << " store file(s), " << format_size(impact.vss.store_bytes)
            << "; clusters " << format_size(impact.vss.cluster_size)
            << (impact.vss.copy_on_write ? ": moves are copied on write, " + format_size(impact.vss.copy_on_write_bytes)
                                         : ": moves are not copied on write (clusters of 16 KiB or more)")
            << '\n';

    out << "\nPartition alignment\n";
    for (const AlignmentFigures& a : impact.alignment) {
        std::string chunks;
        for (const std::uint64_t c : a.misaligned_chunks) chunks += (chunks.empty() ? "" : ", ") + format_size(c);
        out << "  partition " << a.partition << " at byte " << a.start << ": "
            << (a.aligned_1mib ? "1 MiB aligned" : "not 1 MiB aligned")
            << (chunks.empty() ? "" : "; misaligned for " + chunks + " chunks") << '\n';
    }

    if (impact.clone.parent_layers > 0) {
        out << "\nLinked clone (" << impact.clone.parent_layers << " parent layer(s))\n";
        row(out, "read through to parents", format_size(impact.clone.shared_bytes));
        row(out, "copied up by the plan", format_size(impact.clone.sharing_lost_bytes));
    }

    out << "\nImage file layout over the volume (top layer)\n";
    row(out, "before", host_layout_text(impact.host.before));
    row(out, "after", host_layout_text(impact.host.after));
    row(out, "newly allocated",
        format_size(impact.host.new_bytes) +
            (impact.host.in_place ? ", each at its own offset" : ", appended to the file"));

    print_plan_writes(out, impact.plan_writes);

    print_copy_states(out, copy);

    out << "\nWarnings\n";
    print_warnings(out, impact.warnings);
}

void print_plan_writes(std::ostream& out, const PlanWrites& w) {
    const IoStats& s = w.stats;
    // One line of at most 80 columns: the GUI's caption is the same words.
    out << "\nCarrying out the plan: its moves' reads and writes, in IOs of at most " << format_size(w.max_io)
        << '\n';
    row(out, "IOs of the plan", std::to_string(s.ios),
        std::to_string(s.ios - s.writes) + " reads, " + std::to_string(s.writes) + " writes");
    row(out, "data read", format_size(s.bytes - s.written_bytes));
    row(out, "data written", format_size(s.written_bytes));
    row(out, "provisioning", provisioning_text(w.provisioning));
    row(out, "into written blocks", format_size(w.into_written_bytes), "their zeroing block already written");
    row(out, "into new blocks", format_size(w.into_new_bytes),
        std::to_string(s.first_writes) + " first writes of a " + format_size(s.zero_block) + " block");
    print_provisioned(out, "Eager, lazy and thin", s);
}

void print_copy_states(std::ostream& out, const CopyStates& copy) {
    out << "\nFull copy of the image (clone, deploy, Storage vMotion): offload commands\n";
    // Commands and time, each now, after the plan and with the data re-laid.
    out << "  " << pad("", 10) << pad("commands", 33, true) << pad("time", 33, true) << '\n';
    out << "  " << pad("transfer", 10);
    for (int figure = 0; figure < 2; ++figure)
        out << pad("now", 11, true) << pad("after plan", 11, true) << pad("re-laid", 11, true);
    out << '\n';
    for (std::size_t i = 0; i < copy.now.offload.size() && i < copy.after_plan.offload.size(); ++i) {
        const OffloadFigures& n = copy.now.offload[i];
        const OffloadFigures& a = copy.after_plan.offload[i];
        out << "  " << pad(format_size(n.transfer_size), 10) << pad(std::to_string(n.commands), 11, true)
            << pad(std::to_string(a.commands), 11, true) << pad(std::to_string(a.relaid_commands), 11, true)
            << pad(seconds_text(n.seconds), 11, true) << pad(seconds_text(a.seconds), 11, true)
            << pad(seconds_text(a.relaid_seconds), 11, true) << '\n';
    }
    out << hanging("  ",
                   "(re-laid: the image after the plan, copied once by a clone or `qemu-img convert`; " +
                       format_size(copy.now.bytes) + " copied now, " + format_size(copy.after_plan.bytes) +
                       " after)");
    for (const CopyWarning& w : copy.advice) out << hanging("  " + pad(w.code, 24), w.message);
}

void print_warnings(std::ostream& out, const std::vector<ImpactWarning>& warnings) {
    if (warnings.empty()) out << "  none\n";
    for (const ImpactWarning& w : warnings)
        out << "  " << pad(std::string(severity_name(w.severity)), 9) << pad(w.code, 21)
            << pad(format_size(w.bytes), 11, true) << '\n'
            << hanging(std::string(11, ' '), w.message);
}

}  // namespace guestfrag::cli
