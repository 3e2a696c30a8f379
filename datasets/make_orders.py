"""Generate the orders dataset and its ground truth (income per minute), from a seed.

    python datasets/make_orders.py            # writes orders.csv and income_per_minute.csv here
    python datasets/make_orders.py --rows 100000 --out /tmp/orders   # a bigger copy elsewhere

orders.csv: ``order_id,user_id,amount,event_time`` -- 20,000 orders over two hours
of one morning, in event-time order; ``amount`` has exactly two decimals, event
time is ISO 8601 UTC with milliseconds.  income_per_minute.csv: ``minute,orders,income``
where ``minute`` is the first 16 characters of ``event_time`` (``2026-11-21T09:07``) and
``income`` the exact sum of the amounts (computed in integer cents).  Same seed,
same arguments -> byte-identical files.
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import math
import random
from pathlib import Path

SEED = 20261121
ROWS = 20_000
MINUTES = 120
USERS = 2_000
START = dt.datetime(2026, 11, 21, 9, 0, 0, tzinfo=dt.timezone.utc)


def minute_weights(minutes: int) -> list[float]:
    """A morning's shape: a slow start, a peak around 10:00, a lunchtime rise at the end."""
    out = []
    for i in range(minutes):
        out.append(1.0 + 1.6 * math.exp(-((i - 60) / 18) ** 2) + 0.8 * math.exp(-((i - 110) / 10) ** 2))
    return out


def generate(rows: int = ROWS, seed: int = SEED, minutes: int = MINUTES) -> list[tuple]:
    rng = random.Random(seed)
    weights = minute_weights(minutes)
    total = sum(weights)
    counts = [int(rows * w / total) for w in weights]
    for i in rng.sample(range(minutes), rows - sum(counts)):
        counts[i] += 1
    stamps = []
    for minute, n in enumerate(counts):
        stamps.extend(sorted(minute * 60_000 + rng.randrange(60_000) for _ in range(n)))
    orders = []
    for i, ms in enumerate(stamps, start=1):
        cents = max(99, int(round(math.exp(rng.gauss(3.1, 0.75)) * 100)))
        user = f"u{rng.randint(1, USERS):04d}"
        when = START + dt.timedelta(milliseconds=ms)
        orders.append((f"o{i:06d}", user, f"{cents // 100}.{cents % 100:02d}",
                       when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"))
    return orders


def income_per_minute(orders: list[tuple]) -> list[tuple]:
    """(minute, orders, income as a string with two decimals), minute by minute."""
    cents: dict[str, int] = {}
    count: dict[str, int] = {}
    for _, _, amount, when in orders:
        minute = when[:16]
        whole, frac = amount.split(".")
        cents[minute] = cents.get(minute, 0) + int(whole) * 100 + int(frac)
        count[minute] = count.get(minute, 0) + 1
    return [(mi, count[mi], f"{cents[mi] // 100}.{cents[mi] % 100:02d}") for mi in sorted(cents)]


def write(out: Path, rows: int = ROWS, seed: int = SEED) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    orders = generate(rows, seed)
    o, t = out / "orders.csv", out / "income_per_minute.csv"
    with o.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(("order_id", "user_id", "amount", "event_time"))
        w.writerows(orders)
    with t.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(("minute", "orders", "income"))
        w.writerows(income_per_minute(orders))
    return o, t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=ROWS)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = ap.parse_args()
    for p in write(args.out, args.rows, args.seed):
        print(f"wrote {p}")


if __name__ == "__main__":
    main()
