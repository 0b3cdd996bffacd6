"""Every GPU of the node (utilisation, memory, power, temperature, this run's processes on
it) with a short history; each DDP rank's step time with the slowest marked and the spread;
the strategy, the world size and each rank's memory (its parameters, gradients and optimizer
state, against the plan's estimate); CPU and RAM of the training process and machine.
Without a GPU it says so, calmly."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from growcockpit.protocol.machine_load import oversubscribed
from growcockpit.protocol.node import rank_spread
from growcockpit.session.run_state import RunState
from growcockpit.ui.widgets.text_bits import bar, colour, human_bytes, num, spark


def system_text(state: RunState, widget: Static, width: int, compact: bool = False) -> Text:
    text = Text()
    hist_w = max(8, min(40, width - 50))
    ok = colour(widget, "gc-trainable")
    if not state.system_seen:
        text.append("waiting for the first system sample", style="dim")
        return text
    if not state.gpus:
        where = f" (training on {state.device})" if state.device else ""
        text.append(f"no GPU{where}", style="dim")
        text.append("\n")
    for g in (state.gpus[i] for i in sorted(state.gpus)):
        text.append(f"GPU{g.index} ", style="bold")
        if g.name and not compact:
            text.append(f"{g.name[:24]} ", style="dim")
        text.append(f"util {bar((g.util or 0) / 100, 10)} {num(g.util, '.0f'):>3}%  ", style=ok)
        frac = g.mem_frac
        text.append(f"mem {bar(frac, 8)} {human_bytes(g.mem_used)}/{human_bytes(g.mem_total)}  ")
        text.append(f"{num(g.power_w, '.0f')} W  {num(g.temp_c, '.0f')}°C")
        if g.run_pids or g.run_mem:
            procs = f"{len(g.run_pids)} proc " if g.run_pids else ""
            text.append(f"  run {procs}{human_bytes(g.run_mem)}", style="bold")
        if not compact:
            text.append("\n      util ")
            text.append(spark(g.util_hist, hist_w), style=ok)
            text.append("  mem ")
            text.append(spark(g.mem_hist, hist_w // 2))
        text.append("\n")
    ranks_text(state, widget, text, compact)
    rank_memory_text(state, text, compact)
    text.append("CPU ", style="bold")
    text.append(f"run {num(state.cpu_pct, '.0f')}%  ")
    text.append(spark(state.cpu_hist, hist_w if not compact else 10), style=ok)
    text.append(f"  RSS {human_bytes(state.rss_bytes)}")
    machine_text(state, widget, text, compact)
    if state.ram_total:
        frac = (state.ram_used or 0) / state.ram_total
        text.append(
            f"\nRAM {bar(frac, 10)} {human_bytes(state.ram_used)}/{human_bytes(state.ram_total)}  "
        )
        text.append(spark(state.ram_hist, hist_w if not compact else 10))
    return text


def machine_text(state: RunState, widget: Static, text: Text, compact: bool) -> None:
    """The machine next to the run: its CPU, each core, the load average against the cores,
    and a warning when it is oversubscribed (nvitop's view of the host)."""
    if state.machine_cpu_pct is None and not state.load_avg:
        return
    text.append("\nhost ", style="bold")
    text.append(f"{num(state.machine_cpu_pct, '.0f')}% of {state.cores or '?'} cores")
    if state.core_pct and not compact:
        text.append("  ")
        for pct in state.core_pct[:32]:
            text.append(BLOCKS[min(len(BLOCKS) - 1, int(pct / 100 * len(BLOCKS)))])
    if state.load_avg:
        text.append("  load " + " ".join(f"{x:.1f}" for x in state.load_avg[:3]))
        if oversubscribed(state.load_avg[0], state.cores):
            text.append("  oversubscribed", style=f"bold {colour(widget, 'gc-pause')}")


BLOCKS = " ▁▂▃▄▅▆▇█"


def ranks_text(state: RunState, widget: Static, text: Text, compact: bool) -> None:
    """One line: each rank's step time, the slowest highlighted, and the spread in %."""
    spread = rank_spread(state.rank_step_ms)
    if spread is None:
        return
    slow = colour(widget, "gc-pause") if spread.straggler else colour(widget, "gc-lr")
    text.append("ranks ", style="bold")
    for rank, ms in enumerate(spread.step_ms):
        style = f"bold {slow}" if rank == spread.slowest else ""
        mark = " ◀" if rank == spread.slowest else ""
        text.append(f"r{rank} {ms:.0f}{'' if compact else ' ms'}{mark}", style=style)
        text.append("  ")
    verdict = "  straggler" if spread.straggler and not compact else ""
    text.append(f"spread {spread.spread_pct:.0f}%{verdict}", style=slow if spread.straggler else "")
    text.append("\n")


STRATEGY_LABELS = {"ddp": "DDP", "fsdp": "FSDP", "single": "one process"}


def rank_memory_text(state: RunState, text: Text, compact: bool) -> None:
    """The strategy and world size, then one line a rank: parameters, gradients, optimizer
    state (its shards under FSDP), their sum against the plan's estimate, the device peak."""
    mem = state.rank_memory
    if mem is None:
        return
    label = STRATEGY_LABELS.get(mem.strategy, mem.strategy)
    text.append("memory ", style="bold")
    single = mem.strategy == "single"
    text.append(label if single else f"{label} × {mem.world_size} ranks")
    if state.rank_memory_estimate is not None:
        per = "" if single else " a rank"
        text.append(f"  estimate {human_bytes(state.rank_memory_estimate)}{per}", style="dim")
    text.append("\n")
    for r in mem.ranks:
        total = r.params + r.grads + r.optimizer
        text.append(f"  r{r.rank} ")
        if not compact:
            text.append(
                f"params {human_bytes(r.params)}  grads {human_bytes(r.grads)}  "
                f"optim {human_bytes(r.optimizer)}  = "
            )
        text.append(human_bytes(total), style="bold")
        if r.device_peak is not None:
            text.append(f"  peak {human_bytes(r.device_peak)}")
        if r.rss is not None and not compact:
            text.append(f"  RSS {human_bytes(r.rss)}", style="dim")
        text.append("\n")


class SystemPanel(Static):
    def __init__(self, *, compact: bool = False, id: str | None = None) -> None:  # noqa: A002
        super().__init__("", id=id)
        self.compact = compact
        self._last = ""

    def show_state(self, state: RunState) -> None:
        text = system_text(state, self, self.content_region.width or 80, self.compact)
        if text.plain != self._last or not self._last:
            self._last = text.plain
            self.update(text)
