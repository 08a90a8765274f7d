#!/usr/bin/python3
"""Turns the --json file of `spillway bench read|write|transfer` into a PNG chart.

    tools/plot_bench.py BENCH.json OUT.png

The kind of benchmark is read from the file itself. Exit 0 with the chart written,
1 when the file is not one of those benchmarks' --json output (the message names the
file and what is wrong with it), 2 on bad usage. Needs python3-matplotlib (Debian).
"""
import json
import sys

# Contenders of `bench read`: the read algorithms (`into`: window reads in place into the
# caller's memory), then the two limits.
READ_CONTENDERS = [("window", "tab:blue"), ("into", "tab:cyan"), ("group", "tab:orange"),
                   ("fio", "tab:gray"), ("bigbuf", "tab:green")]
TRANSPORT_COLOURS = {"local": "tab:blue", "tcp": "tab:orange", "rdma": "tab:purple"}


class BadInput(Exception):
    pass


def field(record, name, where):
    if not isinstance(record, dict) or name not in record:
        raise BadInput(f"{where}: no field '{name}'")
    return record[name]


def number(record, name, where):
    value = field(record, name, where)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise BadInput(f"{where}: '{name}' is {value!r}, not a number")
    return value


def mib(size):
    if size >= (1 << 30):
        return f"{size / (1 << 30):g} GiB"
    return f"{size / (1 << 20):.2f} MiB" if size >= (1 << 20) else f"{size // 1024} KiB"


def plot_read(data, plt):
    results = field(data, "results", "the file")
    sizes = sorted({number(r, "object_size", "results[]") for r in results}, reverse=True)
    ns = sorted({int(number(r, "n", "results[]")) for r in results})
    gbps = {(r["object_size"], r["contender"], r["n"]): number(r, "gbps", "results[]")
            for r in results}
    cold = data.get("cold_start")
    panels = len(sizes) + (1 if cold else 0)
    fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4.2), squeeze=False)
    width = 0.8 / len(READ_CONTENDERS)
    for ax, size in zip(axes[0], sizes):
        for c, (name, colour) in enumerate(READ_CONTENDERS):
            xs = [i + (c - (len(READ_CONTENDERS) - 1) / 2) * width for i in range(len(ns))]
            ys = [gbps.get((size, name, n), 0) for n in ns]
            limit = name in ("fio", "bigbuf")
            ax.bar(xs, ys, width, label=name + (" (limit)" if limit else ""), color=colour,
                   hatch="//" if limit else None, edgecolor="white" if limit else colour)
        ax.set_xticks(range(len(ns)), [f"N={n}" for n in ns])
        ax.set_ylabel("GB/s (median)")
        ax.set_title(f"bench read, {mib(size)} values")
        ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2)
    if cold:
        ax = axes[0][-1]
        first = number(cold, "first_batch_s", "cold_start")
        registered = number(cold, "registered_s", "cold_start")
        ax.barh(["every reader\nregistered", "first batch\nanswered"], [registered, first],
                color=["tab:green", "tab:blue"])
        for y, t in enumerate([registered, first]):
            ax.text(t, y, f" {t:.3f} s", va="center")
        ax.set_xlabel("seconds after the node started")
        ax.set_xlim(0, max(registered, first) * 1.35 or 1)
        ax.set_title(f"cold start, {mib(cold.get('arena_bytes', 0))} arena "
                     f"({cold.get('arena_pages', '?')} pages)")
    fig.suptitle(f"medians of {data.get('runs', '?')} interleaved runs")
    return fig


def plot_write(data, plt):
    results = field(data, "results", "the file")
    fig, ax = plt.subplots(figsize=(6, 4.2))
    labels = [mib(number(r, "object_size", "results[]")) for r in results]
    xs = range(len(results))
    ax.bar([x - 0.2 for x in xs], [number(r, "spillway_gbps", "results[]") for r in results],
           0.4, label="spillway puts", color="tab:blue")
    ax.bar([x + 0.2 for x in xs], [number(r, "fio_gbps", "results[]") for r in results],
           0.4, label="fio (limit)", color="tab:gray", hatch="//", edgecolor="white")
    ax.set_xticks(list(xs), labels)
    ax.set_ylabel("GB/s (median)")
    ax.set_title(f"bench write, medians of {data.get('runs', '?')} interleaved runs")
    ax.legend()
    return fig


def plot_transfer(data, plt):
    cases = field(data, "cases", "the file")
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(cases)), 4.5))
    for i, c in enumerate(cases):
        where = f"cases[{i}]"
        speedup = number(c, "speedup", where)
        low, high = number(c, "speedup_ci95_low", where), number(c, "speedup_ci95_high", where)
        transport = field(c, "transport", where)
        ax.errorbar([i], [speedup], yerr=[[speedup - low], [high - speedup]], fmt="o",
                    capsize=4, color=TRANSPORT_COLOURS.get(transport, "black"))
    for transport, colour in TRANSPORT_COLOURS.items():
        if any(c["transport"] == transport for c in cases):
            ax.plot([], [], "o", color=colour, label=transport)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(cases)), [c["case"] for c in cases], rotation=45, ha="right")
    ax.set_ylabel("watermark / naive (median, 95% interval)")
    ax.set_title(f"bench transfer, {data.get('runs', '?')} interleaved runs")
    ax.legend()
    fig.tight_layout()
    return fig


def kind_of(data):
    if not isinstance(data, dict):
        raise BadInput("not a JSON object")
    if "cases" in data:
        return plot_transfer
    results = data.get("results")
    if isinstance(results, list) and results and isinstance(results[0], dict):
        if "contender" in results[0]:
            return plot_read
        if "spillway_gbps" in results[0]:
            return plot_write
    raise BadInput("not the --json of spillway bench read, write or transfer "
                   "(no 'cases', and no 'results' with 'contender' or 'spillway_gbps')")


def main(argv):
    if len(argv) != 3 or argv[1].startswith("-"):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    source, out = argv[1], argv[2]
    try:
        with open(source, encoding="utf-8") as f:
            data = json.load(f)
        plot = kind_of(data)
    except OSError as e:
        print(f"plot_bench.py: {source}: {e.strerror}", file=sys.stderr)
        return 1
    except json.JSONDecodeError as e:
        print(f"plot_bench.py: {source}:{e.lineno}:{e.colno}: not JSON: {e.msg}", file=sys.stderr)
        return 1
    except BadInput as e:
        print(f"plot_bench.py: {source}: {e}", file=sys.stderr)
        return 1
    try:
        import matplotlib
    except ImportError:
        print("plot_bench.py: needs matplotlib: apt-get install python3-matplotlib "
              "(and run Debian's /usr/bin/python3)", file=sys.stderr)
        return 1
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    try:
        fig = plot(data, plt)
    except (BadInput, KeyError, TypeError) as e:
        print(f"plot_bench.py: {source}: {e}", file=sys.stderr)
        return 1
    fig.savefig(out, dpi=110, bbox_inches="tight")
    print(f"plot_bench.py: wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
