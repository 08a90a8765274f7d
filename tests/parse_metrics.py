"""Reads Prometheus text exposition from the file named on the command line with the
real parser (python3-prometheus-client's text_string_to_metric_families) and prints
one line per sample: TYPE NAME{label="value",...} VALUE, labels sorted. Exit 1 when the
parser refuses the text, 77 (skipped) without the parser."""
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("skipped: python3-prometheus-client is not installed", file=sys.stderr)
    sys.exit(77)

with open(sys.argv[1], encoding="utf-8") as f:
    text = f.read()
try:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            print(f"{family.type} {sample.name}{{{labels}}} {sample.value!r}")
except ValueError as e:
    print(f"parse_metrics.py: {e}", file=sys.stderr)
    sys.exit(1)
