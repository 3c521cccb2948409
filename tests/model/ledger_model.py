#!/usr/bin/env python3
"""Model-based test of the open-items ledger (DESIGN "Keys across windows").

Generates seeded, deterministic random multi-day histories for a job like
examples/basic (Asia/Shanghai, CNY, one CSV statement per day, a SQLite local
flow with the merchant tables), drives the built binary day by day with
RECON_NOW, and after every run compares the state store and the merchant
database with a small, slow oracle written from the rules in the README (it
shares no code with src/):
  (a) the open t1 items (key, class),
  (b) every ticket's status, in the state store and in flow.db's recon_ticket,
  (c) the local flow's rows (replays added).

  python3 tests/model/ledger_model.py --recon build/recon            # 200 histories
  python3 tests/model/ledger_model.py --seed N --recon build/recon -v  # one, verbose
  python3 tests/model/ledger_model.py --seed N --recon build/recon --shrink
"""
import argparse
import concurrent.futures
import csv
import datetime as dt
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))

# Seeds the engine disagreed on (minimal history: --shrink): always run, whatever
# --base and --histories say.
#   1  ORD-014 duplicate on 03-03: the next day's run resolves its item (matched)
#   2  ORD-006 awaiting (local REFUNDED, upstream paid 03-03): a rerun of 03-01 calls it extra
#   5  ORD-009 refund only, no local row: missing + ticket, the next run resolves it (matched)
#      (all three: an open item of a key the window does not touch is evaluated without
#      the ledger rows of other windows)
#   24 ORD-010 paid before the history, its only refund dropped by a corrected statement:
#      the rerun finds nothing (its local row, outside the window, is never looked up)
#   63 the same with a local row already REFUNDED before the history
#   3069 (--only ORD-001) the same for an order paid in the history (its payment omitted
#      from the first statement: extra, then matched by a refund that a correction drops)
#   4137 (--only ORD-009) paid 03-01 (matched), revoked 03-02, local CLOSED; the
#      revocation is dropped by a correction: the rerun forgets the 03-01 payment
#      (matched, expected status_mismatch)
#   3272 (--only ORD-013) the same with a full refund dropped (expected awaiting)
REGRESSION_SEEDS = [1, 2, 5, 24, 63, 3069, 4137, 3272]

BASE = dt.datetime(2024, 3, 1)          # the first business day (local, Asia/Shanghai)
SH = dt.timedelta(hours=8)              # Asia/Shanghai: UTC+8, no DST since 1991
MARGIN = dt.timedelta(minutes=10)       # job "margin" (settle_after defaults to it)
STUCK_AFTER = dt.timedelta(minutes=15)  # job "stuck_after"
REFUND_AFTER = dt.timedelta(days=3)     # job "refund_after": a local refund awaited upstream
JOB_NAME = "model_ledger"
TICKETED = ("extra", "amount_mismatch", "status_mismatch", "duplicate")
LOCAL_STATUS = {"PAID": "success", "PENDING": "pending", "REFUNDED": "refunded",
                "CLOSED": "closed"}
HEADER = ["trade_time", "transaction_id", "out_trade_no", "entry_type", "amount",
          "refund_id", "currency"]

JOB_JSON = """{
  "job": "%s",
  "description": "model-based test of the open-items ledger (tests/model)",
  "timezone": "Asia/Shanghai",
  "currency": "CNY",
  "upstream": {
    "kind": "csv",
    "path": "statements/{date}.csv",
    "delimiter": ",",
    "allow_empty": true,
    "header": true,
    "columns": {
      "key": "out_trade_no",
      "txn_id": "transaction_id",
      "refund_id": "refund_id",
      "entry_type": "entry_type",
      "amount": "amount",
      "currency": "currency",
      "time": "trade_time"
    },
    "entry_types": { "PAYMENT": "payment", "REFUND": "refund", "REVOKED": "revoke", "FEE": "keyless" }
  },
  "local": {
    "kind": "sqlite",
    "path": "flow.db",
    "table": "payment_flow",
    "columns": { "key": "out_trade_no", "amount_minor": "amount_cents",
                 "currency": "currency", "status": "status", "time": "created_at" }
  },
  "status_map": { "local": { "PAID": "success", "PENDING": "pending",
                             "REFUNDED": "refunded", "CLOSED": "closed" } },
  "amount_tolerance_minor": 0,
  "stuck_after": "15m",
  "margin": "10m",
  "hot": { "size": "5m", "lag": "2m" },
  "max_rejects": 0,
  "state": "state/recon.db",
  "heartbeat": "state/recon.prom"
}
""" % JOB_NAME


def day_start(d):
    return BASE + dt.timedelta(days=d)


def fmt_local(t):
    return t.strftime("%Y-%m-%d %H:%M:%S")


def fmt_money(c):
    return "%d.%02d" % (c // 100, c % 100)


def recon_now(t_local):
    return (t_local - SH).strftime("%Y-%m-%dT%H:%M:%SZ")


def day_of(t):
    return (t.date() - BASE.date()).days


# ---------------------------------------------------------------------------
# Generator: a seeded random history
# ---------------------------------------------------------------------------

class Entry:
    """One statement line."""
    __slots__ = ("time", "txn", "key", "type", "amount", "refund_id", "currency")

    def __init__(self, time_, txn, key, type_, amount, refund_id="", currency="CNY"):
        self.time, self.txn, self.key, self.type = time_, txn, key, type_
        self.amount, self.refund_id, self.currency = amount, refund_id, currency

    def ident(self):
        return (self.key, self.type, self.txn, self.refund_id)

    def row(self):
        return [fmt_local(self.time), self.txn, self.key, self.type, fmt_money(self.amount),
                self.refund_id, self.currency]

    def copy(self):
        return Entry(self.time, self.txn, self.key, self.type, self.amount, self.refund_id,
                     self.currency)

    def __repr__(self):
        return "%s %s %s %s%s" % (fmt_local(self.time), self.type, self.key,
                                   fmt_money(self.amount),
                                   " " + self.refund_id if self.refund_id else "")


class Order:
    def __init__(self, key, kind):
        self.key, self.kind = key, kind
        self.entries = []       # true upstream entries
        self.dup = set()        # indexes of entries the provider lists twice
        self.omitted = set()    # indexes left out of the first version of their statement
        self.ops = []           # local writes: (time, op, arg); op insert|status|amount|currency
        self.late_day = None    # the insert waits for the run of this day
        self.note = ""

    def describe(self):
        s = ["%s [%s]%s" % (self.key, self.kind, " " + self.note if self.note else "")]
        for i, e in enumerate(self.entries):
            flags = (" (listed twice)" if i in self.dup else "") + \
                    (" (omitted at first)" if i in self.omitted else "")
            s.append("    upstream %r%s" % (e, flags))
        for t, op, arg in self.ops:
            if op == "insert":
                s.append("    local %s insert %s %s %s %s%s" % (
                    fmt_local(t), arg["amount"], arg["currency"], arg["status"],
                    arg["created"],
                    "" if self.late_day is None else " (written before the run of day %d)" %
                    self.late_day))
            else:
                s.append("    local %s %s -> %s" % (fmt_local(t), op, arg))
        return "\n".join(s)


class Gen:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.txn_no = 0
        self.ref_no = 0

    def txn(self, t):
        self.txn_no += 1
        return "4200000001%s%04d" % (t.strftime("%Y%m%d"), self.txn_no)

    def refund_id(self, t):
        self.ref_no += 1
        return "5030000001%s%04d" % (t.strftime("%Y%m%d"), self.ref_no)

    def amount(self):
        r = self.rng
        return r.choice([r.randrange(100, 20000), r.randrange(1, 100) * 100, 990, 1250])

    def time_in_day(self, d, lo=0, hi=86400):
        return day_start(d) + dt.timedelta(seconds=self.rng.randrange(lo, hi))

    def local_lag(self, t, floor):
        """When the local flow records a change the provider made at t."""
        r = self.rng.random()
        if r < 0.6:
            x = t + dt.timedelta(seconds=self.rng.randrange(0, 60))
        elif r < 0.8:   # the local flow is behind: after the next run
            x = t + dt.timedelta(seconds=self.rng.randrange(12 * 3600, 36 * 3600))
        else:           # the local flow is ahead of the statement
            x = t - dt.timedelta(seconds=self.rng.randrange(3600, 10 * 3600))
        return max(x, floor + dt.timedelta(seconds=1))

    def paid_order(self, o, days, local=True, status_paid="PAID", local_amount=None,
                   local_currency="CNY", pending_lag=None):
        """Created, paid, and perhaps refunded or revoked later."""
        r = self.rng
        d = r.randrange(days)
        x = r.random()
        if x < 0.15:    # created 23:5x, paid 00:0x the next day
            created = self.time_in_day(d, 23 * 3600 + 50 * 60, 23 * 3600 + 59 * 60 + 50)
            pay = day_start(d + 1) + dt.timedelta(seconds=r.randrange(0, 540))
            o.note += "midnight "
        elif x < 0.25:  # created just after midnight (read by the previous day's margin)
            created = self.time_in_day(d, 0, 300)
            pay = created + dt.timedelta(seconds=r.randrange(5, 120))
        else:
            created = self.time_in_day(d, 0, 23 * 3600 + 40 * 60)
            pay = created + dt.timedelta(seconds=r.randrange(5, 300))
        amt = self.amount()
        txn = self.txn(pay)
        o.entries.append(Entry(pay, txn, o.key, "PAYMENT", amt))
        if local:
            o.ops.append((created, "insert", {
                "amount": amt if local_amount is None else local_amount(amt),
                "currency": local_currency, "status": "PENDING", "created": fmt_local(created)}))
            if pending_lag is None:
                o.ops.append((pay + dt.timedelta(seconds=r.randrange(1, 30)), "status",
                              status_paid))
            elif pending_lag is not False:
                o.ops.append((pay + pending_lag, "status", status_paid))
        life = r.random()
        last = pay
        if life < 0.35:
            return o, created, pay, amt, txn
        if life < 0.75:     # refunds, partial or full, over later days
            full = r.random() < 0.5
            n = r.randint(1, 3)
            total = amt if full else r.randrange(1, amt) if amt > 1 else 0
            if total == 0:
                return o, created, pay, amt, txn
            n = min(n, total)
            cuts = sorted(r.sample(range(1, total), n - 1)) if n > 1 else []
            parts = [b - a for a, b in zip([0] + cuts, cuts + [total])]
            for p in parts:
                rd = day_of(last) + (0 if r.random() < 0.2 else r.randint(1, 2))
                lo = max(0, int((last - day_start(rd)).total_seconds()) + 1)
                if lo >= 86400:
                    rd += 1
                    lo = 0
                t = self.time_in_day(rd, lo, 86400)
                o.entries.append(Entry(t, txn, o.key, "REFUND", p, self.refund_id(t)))
                last = t
            o.note += "refunded %s/%s " % (fmt_money(total), fmt_money(amt))
            if full and local:
                o.ops.append((self.local_lag(last, pay), "status", "REFUNDED"))
        else:               # revoked on a later day
            rd = day_of(pay) + r.randint(1, 2)
            t = self.time_in_day(rd)
            o.entries.append(Entry(t, txn, o.key, "REVOKED", 0))
            o.note += "revoked "
            if local:
                o.ops.append((self.local_lag(t, pay), "status", "CLOSED"))
        return o, created, pay, amt, txn

    def order(self, i, days):
        r = self.rng
        key = "ORD-%03d" % (i + 1)
        kind = r.choices(["normal", "missing", "extra", "pending", "amount", "prehistory",
                          "duplicate", "wrong_status"],
                         [30, 10, 10, 10, 8, 10, 8, 6])[0]
        o = Order(key, kind)
        if kind == "normal":
            self.paid_order(o, days)
        elif kind == "missing":
            o, created, pay, amt, txn = self.paid_order(o, days, local=r.random() < 0.4)
            if o.ops:   # written late: only before a later day's run
                o.late_day = day_of(created) + r.randint(1, 3)
        elif kind == "extra":   # local only
            d = r.randrange(days)
            if r.random() < 0.3:
                created = self.time_in_day(d, 23 * 3600 + 48 * 60, 23 * 3600 + 59 * 60 + 50)
            else:
                created = self.time_in_day(d, 0, 23 * 3600 + 40 * 60)
            o.ops.append((created, "insert", {"amount": self.amount(), "currency": "CNY",
                                              "status": "PENDING",
                                              "created": fmt_local(created)}))
            if r.random() < 0.8:
                o.ops.append((created + dt.timedelta(seconds=r.randrange(1, 60)), "status",
                              r.choice(["PAID", "PAID", "REFUNDED"])))
                if r.random() < 0.3:    # the merchant notices: closed later
                    o.ops.append((created + dt.timedelta(hours=r.randrange(20, 60)), "status",
                                  "CLOSED"))
            else:
                o.note += "stays pending "
                if r.random() < 0.5:
                    o.ops.append((created + dt.timedelta(hours=r.randrange(1, 40)), "status",
                                  "CLOSED"))
            if r.random() < 0.3:
                o.late_day = d + r.randint(1, 2)
        elif kind == "pending":     # paid upstream, local pending (stuck or in flight)
            lag = False if r.random() < 0.5 else dt.timedelta(hours=r.randrange(2, 40))
            self.paid_order(o, days, pending_lag=lag)
        elif kind == "amount":
            if r.random() < 0.2:
                self.paid_order(o, days, local_currency="USD")
                if r.random() < 0.3:
                    t = o.ops[0][0] + dt.timedelta(hours=r.randrange(20, 50))
                    o.ops.append((t, "currency", "CNY"))
            else:
                delta = r.choice([-1, 1]) * r.randrange(1, 500)
                self.paid_order(o, days, local_amount=lambda a: a + delta if a + delta > 0
                                else a + abs(delta))
                if r.random() < 0.3:
                    t = o.ops[0][0] + dt.timedelta(hours=r.randrange(20, 50))
                    o.ops.append((t, "amount", o.entries[0].amount))
        elif kind == "prehistory":  # paid before the first reconciled day, refunded now
            created = dt.datetime(2024, 2, r.randrange(10, 29)) + \
                dt.timedelta(seconds=r.randrange(0, 86000))
            amt = self.amount()
            txn = self.txn(created)
            variant = r.choice(["partial", "full", "rest", "nolocal"])
            if variant == "rest":   # a first part refunded before the history
                first = r.randrange(1, amt) if amt > 1 else 1
                total = amt - first
            elif variant == "full":
                total = amt
            else:
                total = r.randrange(1, amt + 1)
            n = max(1, min(r.randint(1, 2), total))
            cuts = sorted(r.sample(range(1, total), n - 1)) if n > 1 else []
            parts = [b - a for a, b in zip([0] + cuts, cuts + [total])] if total > 0 else []
            last = day_start(0)
            for p in parts:
                rd = day_of(last) + r.randint(0, 2)
                lo = max(0, int((last - day_start(rd)).total_seconds()) + 1)
                t = self.time_in_day(rd, min(lo, 86399), 86400)
                o.entries.append(Entry(t, txn, key, "REFUND", p, self.refund_id(t)))
                last = t
            o.note = "%s: paid %s, refunded %s in history" % (variant, fmt_money(amt),
                                                              fmt_money(total))
            if variant != "nolocal" or r.random() < 0.4:
                st = "REFUNDED" if variant == "rest" else "PAID"
                o.ops.append((created, "insert", {"amount": amt, "currency": "CNY",
                                                  "status": st, "created": fmt_local(created)}))
                if variant in ("full", "partial") and total == amt and parts:
                    o.ops.append((self.local_lag(last, created), "status", "REFUNDED"))
                if variant == "nolocal":
                    o.late_day = r.randint(1, days)
        elif kind == "duplicate":
            self.paid_order(o, days)
            o.dup.add(r.randrange(len(o.entries)))
        elif kind == "wrong_status":
            self.paid_order(o, days, status_paid=r.choice(["CLOSED", "REFUNDED"]))
            if r.random() < 0.4:    # put right later
                t = o.entries[0].time + dt.timedelta(hours=r.randrange(20, 50))
                o.ops.append((t, "status", "PAID"))
        for i in range(len(o.entries)):
            if r.random() < 0.06:
                o.omitted.add(i)
        o.ops.sort(key=lambda x: (x[0], x[1] != "insert"))
        return o


class History:
    def __init__(self, seed, only=None):
        g = Gen(seed)
        r = g.rng
        self.seed = seed
        self.days = r.randint(3, 6)
        n = r.randint(5, 15)
        self.orders = [g.order(i, self.days) for i in range(n)]
        if only is not None:
            self.orders = [o for o in self.orders if o.key in only]
        # the truth of every day's statement, and its first published version
        self.truth = {d: [] for d in range(self.days)}
        self.first = {d: [] for d in range(self.days)}
        for o in self.orders:
            for i, e in enumerate(o.entries):
                d = day_of(e.time)
                if d < 0 or d >= self.days:
                    continue
                copies = 2 if i in o.dup else 1
                self.truth[d] += [e.copy() for _ in range(copies)]
                if i not in o.omitted:
                    self.first[d] += [e.copy() for _ in range(copies)]
        for d in range(self.days):
            self.truth[d].sort(key=lambda e: (e.time, e.key))
            self.first[d].sort(key=lambda e: (e.time, e.key))
        # the schedule: day-by-day runs, reruns, corrections (plain data, independent of
        # the orders so that --shrink keeps it)
        s = random.Random(seed * 7919 + 1)
        self.steps = []
        for d in range(self.days):
            self.steps.append(("run", d, s.random() < 0.1))
            if d >= 1 and s.random() < 0.3:
                self.steps.append(("rerun", s.randrange(0, d), s.random() < 0.1))
            if s.random() < 0.25:
                self.steps.append(("correct", s.randrange(0, d + 1), s.random()))
        for _ in range(s.randint(0, 2)):
            self.steps.append(("rerun", s.randrange(0, self.days), s.random() < 0.1))
        self.fee = s.random() < 0.5

    def describe(self):
        out = ["seed %d: %d days from %s, %d orders" % (self.seed, self.days,
                                                         BASE.date(), len(self.orders))]
        out += [o.describe() for o in self.orders]
        out.append("schedule: " + ", ".join(
            "%s %s%s" % (k, day_start(d).date(), " (+dry run)" if k != "correct" and x is True
                         else "") for k, d, x in self.steps))
        return "\n".join(out)


# ---------------------------------------------------------------------------
# Oracle: the rules, simple and slow
# ---------------------------------------------------------------------------

class Oracle:
    def __init__(self):
        self.reconciled = {}    # day -> list of entries (the latest successfully run version)
        self.items = {}         # key -> {"class", "since"} (open t1 items)
        self.tickets = {}       # (key, class) -> open|resolved
        self.local = {}         # key -> {"amount", "currency", "status", "created"}
        self.cov = {}           # what the history exercised (printed in the summary)
        # key -> (day, amount): a payment assumed from the local row when a refund or
        # revocation came with no payment in view (README: "assumed payments")
        self.assumed = {}

    def count(self, what):
        self.cov[what] = self.cov.get(what, 0) + 1

    def snapshot(self):
        return ({k: v["class"] for k, v in self.items.items()}, dict(self.tickets),
                {k: dict(v) for k, v in self.local.items()})

    def evaluate(self, k, view, now, horizon, first_start, day=None):
        """The class of key k: a class name, 'awaiting', 'in_flight', 'matched' or
        'replay' (missing with a committed replay)."""
        ents = [e for d in sorted(view) for e in view[d] if e.key == k]
        loc = self.local.get(k)
        assumed = self.assumed.get(k)
        if assumed and assumed[0] != day and not any(e.type == "PAYMENT" for e in ents):
            # the assumed payment stands in where no real one is known
            ents = ents + [Entry(dt.datetime.strptime(loc["created"], "%Y-%m-%d %H:%M:%S")
                                 if loc else day_start(assumed[0]),
                                 "assumed", k, "PAYMENT", assumed[1],
                                 currency=loc["currency"] if loc else "CNY")]
        for d in view:
            ids = [e.ident() for e in view[d] if e.key == k]
            if len(ids) != len(set(ids)):
                return "duplicate"
        if not ents:
            if loc and loc["status"] in ("PAID", "REFUNDED"):
                created = dt.datetime.strptime(loc["created"], "%Y-%m-%d %H:%M:%S")
                return "extra" if created + MARGIN <= horizon else "awaiting"
            return "matched"
        has_pay = any(e.type == "PAYMENT" for e in ents)
        paid = sum(e.amount for e in ents if e.type == "PAYMENT")
        refunded = sum(e.amount for e in ents if e.type == "REFUND")
        revoked = any(e.type == "REVOKED" for e in ents)
        order = paid if has_pay else (loc["amount"] if loc else 0)
        if revoked:
            ust = "closed"
        elif refunded > 0 and order > 0 and refunded >= order:
            ust = "refunded"
        elif has_pay or any(e.type == "REFUND" for e in ents):
            ust = "success"
        else:
            ust = "pending"
        if loc is None:
            if ust in ("success", "refunded"):
                return "replay" if has_pay else "missing"
            return "matched"
        currency = ents[0].currency
        if currency != loc["currency"] or order != loc["amount"] or refunded > order:
            return "amount_mismatch"
        lst = LOCAL_STATUS[loc["status"]]
        terminal = ("success", "refunded", "closed")
        if ust in terminal and lst == "pending":
            last = max(e.time for e in ents)
            return "stuck" if now > last + STUCK_AFTER else "in_flight"
        if ust in terminal and lst in terminal and ust != lst:
            if lst == "refunded" and ust == "success":
                created = dt.datetime.strptime(loc["created"], "%Y-%m-%d %H:%M:%S")
                if not has_pay and created < first_start:
                    return "matched"
                item = self.items.get(k)
                since = item["since"] if item and item["class"] == "awaiting" else now
                return "status_mismatch" if since + REFUND_AFTER <= horizon else "awaiting"
            return "status_mismatch"
        return "matched"

    def end_item(self, k):
        old = self.items.pop(k, None)
        if old and (k, old["class"]) in self.tickets:
            self.tickets[(k, old["class"])] = "resolved"

    def open_item(self, k, cls, now):
        old = self.items.get(k)
        if old and old["class"] == cls:
            return
        self.count("superseded" if old else "opened")
        self.count(cls)
        self.end_item(k)
        self.items[k] = {"class": cls, "since": now}
        if cls in TICKETED or cls == "missing":
            if self.tickets.get((k, cls)) == "resolved":
                self.count("ticket reopened")
            self.tickets[(k, cls)] = "open"

    def run(self, day, stmt, now, dry):
        """A successful run (or rerun) of day with the statement stmt at now."""
        if dry:
            return
        prev = self.reconciled.get(day, [])
        self.reconciled[day] = [e.copy() for e in stmt]
        view = self.reconciled
        horizon = day_start(max(view) + 1)
        first_start = day_start(min(view))
        lo, hi = day_start(day), day_start(day + 1)
        keys = {e.key for e in stmt} | {e.key for e in prev} | set(self.items)
        for k, loc in self.local.items():
            created = dt.datetime.strptime(loc["created"], "%Y-%m-%d %H:%M:%S")
            if lo <= created < hi:
                keys.add(k)
        self.last_eval = {}
        # a rerun of a day replaces the payments assumed there (after its evaluation)
        dropped = [k for k, (d, _) in self.assumed.items() if d == day]
        for k in sorted(keys):
            self.assume(k, day, stmt, view, first_start)
            cls = self.evaluate(k, view, now, horizon, first_start, day)
            # --triage only: the class had the key been evaluated with this window's
            # entries alone (the shape of the first engine disagreement found: open items
            # evaluated without the other windows' ledger rows)
            own = {day: stmt} if any(e.key == k for e in stmt) else {}
            self.last_eval[k] = (cls, self.evaluate(k, own, now, horizon, first_start))
            if cls == "matched":
                if k in self.items:
                    self.count("resolved")
                self.end_item(k)
            elif cls == "replay":
                ents = [e for d in view for e in view[d] if e.key == k]
                paid = sum(e.amount for e in ents if e.type == "PAYMENT")
                refunded = sum(e.amount for e in ents if e.type == "REFUND")
                revoked = any(e.type == "REVOKED" for e in ents)
                st = "REFUNDED" if not revoked and refunded > 0 and refunded >= paid else "PAID"
                self.local[k] = {"amount": paid, "currency": ents[0].currency, "status": st,
                                 "created": fmt_local(min(e.time for e in ents))}
                self.count("replayed")
                old = self.items.get(k)
                if old and old["class"] != "missing":
                    self.end_item(k)    # superseded by missing
                self.end_item(k)        # the missing item: resolved by the replay
            else:
                self.open_item(k, cls, now)
        for k in dropped:
            if self.assumed.get(k, (None,))[0] == day:
                del self.assumed[k]

    def assume(self, k, day, stmt, view, first_start):
        """A refund or revocation of this window with no payment in view, on an order
        with no open item whose local row lies in an earlier day of the history: its
        payment is taken to have matched there (the first such assumption stands)."""
        if k in self.assumed or k in self.items or not any(e.key == k for e in stmt):
            return
        if any(e.type == "PAYMENT" for d in view for e in view[d] if e.key == k):
            return
        loc = self.local.get(k)
        if not loc:
            return
        created = dt.datetime.strptime(loc["created"], "%Y-%m-%d %H:%M:%S")
        e_day = day_of(created)
        if created < first_start or e_day >= day:
            return
        self.assumed[k] = (e_day, loc["amount"])


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------

class Failure(Exception):
    pass


# One recon run of a history takes well under a second (seconds under the sanitizers).
RUN_TIMEOUT = 120


def threads_of(pid):
    """Each thread of a process: its name, kernel wait channel and system call (Linux /proc)."""
    lines = []
    try:
        for tid in sorted(os.listdir("/proc/%d/task" % pid), key=int):
            d = "/proc/%d/task/%s/" % (pid, tid)
            got = []
            for f in ("comm", "wchan", "syscall"):
                try:
                    with open(d + f) as fh:
                        got.append(fh.read().strip())
                except OSError:
                    got.append("?")
            lines.append("  thread %s %s: waits in %s, syscall %s" % (tid, got[0], got[1], got[2]))
    except OSError as e:
        lines.append("  (threads unreadable: %s)" % e)
    return "\n".join(lines)


def observe(wd):
    items, tickets = {}, {}
    if not os.path.exists(os.path.join(wd, "state", "recon.db")):
        st = sqlite3.connect(":memory:")    # none yet (a dry run may leave an empty one)
        st.executescript("CREATE TABLE items (key, class, state, mode); "
                         "CREATE TABLE tickets (key, class, status);")
    else:
        st = sqlite3.connect("file:%s?mode=ro" % os.path.join(wd, "state", "recon.db"),
                             uri=True)
    try:
        for k, c in st.execute("SELECT key, class FROM items WHERE state = 'open' AND "
                               "mode = 't1'"):
            if k in items:
                items[k] = items[k] + "+" + c   # two open items for one key
            else:
                items[k] = c
        tickets = {(k, c): s for k, c, s in st.execute("SELECT key, class, status FROM tickets")}
    finally:
        st.close()
    fl = sqlite3.connect("file:%s?mode=ro" % os.path.join(wd, "flow.db"), uri=True)
    try:
        mtickets = {(k, c): s for k, c, s in fl.execute(
            "SELECT biz_key, class, status FROM recon_ticket")}
        local = {}
        for k, a, cur, s, c in fl.execute("SELECT out_trade_no, amount_cents, currency, status, "
                                          "created_at FROM payment_flow"):
            local[k] = {"amount": a, "currency": cur, "status": s, "created": c}
    finally:
        fl.close()
    return items, tickets, mtickets, local


def diff_dicts(name, want, got):
    out = []
    for k in sorted(set(want) | set(got), key=str):
        w, g = want.get(k), got.get(k)
        if w != g:
            out.append("  %s %s: expected %s, got %s" % (name, k, w, g))
    return out


class Runner:
    def __init__(self, hist, recon, work, verbose=False):
        self.h, self.recon, self.wd, self.verbose = hist, os.path.abspath(recon), work, verbose
        self.oracle = Oracle()
        self.log = []
        self.nruns = 0
        self.current = {d: [e.copy() for e in hist.first[d]] for d in range(hist.days)}
        self.applied = {o.key: 0 for o in hist.orders}  # local ops applied per order
        self.triage = None

    def say(self, msg):
        self.log.append(msg)
        if self.verbose:
            print(msg, flush=True)

    def setup(self):
        shutil.rmtree(self.wd, ignore_errors=True)
        os.makedirs(os.path.join(self.wd, "statements"))
        with open(os.path.join(self.wd, "job.json"), "w") as f:
            f.write(JOB_JSON)
        db = sqlite3.connect(os.path.join(self.wd, "flow.db"))
        for name in ("payment_flow.sql", "merchant.sql"):
            with open(os.path.join(SOURCE_DIR, "sql", "sqlite", name)) as f:
                db.executescript(f.read())
        db.commit()
        db.close()
        for d in range(self.h.days):
            self.write_statement(d)

    def write_statement(self, d):
        path = os.path.join(self.wd, "statements", "%s.csv" % day_start(d).date())
        with open(path, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(HEADER)
            for e in self.current[d]:
                w.writerow(e.row())
            if self.h.fee:
                w.writerow([fmt_local(day_start(d) + dt.timedelta(seconds=86399)), "", "",
                            "FEE", "0.66", "", "CNY"])

    def sync_local(self, now, day):
        """The merchant's own writes up to now (late rows wait for their day's run)."""
        db = sqlite3.connect(os.path.join(self.wd, "flow.db"))
        loc = self.oracle.local
        for o in self.h.orders:
            i = self.applied[o.key]
            while i < len(o.ops):
                t, op, arg = o.ops[i]
                if t > now:
                    break
                if op == "insert":
                    if o.late_day is not None and day < o.late_day:
                        break
                    db.execute("INSERT INTO payment_flow (out_trade_no, amount_cents, currency, "
                               "status, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO "
                               "NOTHING", (o.key, arg["amount"], arg["currency"], arg["status"],
                                           arg["created"]))
                    if o.key not in loc:
                        loc[o.key] = dict(arg)
                    self.say("  local: insert %s %s %s %s %s" % (
                        o.key, arg["amount"], arg["currency"], arg["status"], arg["created"]))
                else:
                    col = {"status": "status", "amount": "amount_cents",
                           "currency": "currency"}[op]
                    db.execute("UPDATE payment_flow SET %s = ? WHERE out_trade_no = ?" % col,
                               (arg, o.key))
                    if o.key in loc:
                        loc[o.key][op] = arg
                    self.say("  local: %s %s -> %s (at %s)" % (o.key, op, arg, fmt_local(t)))
                i += 1
            self.applied[o.key] = i
        db.commit()
        db.close()

    def recon_cmd(self, args, now):
        env = dict(os.environ, RECON_NOW=recon_now(now), TZ="UTC")
        cmd = [self.recon] + args + ["--job", os.path.join(self.wd, "job.json"), "--quiet"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                text=True)
        try:
            out, err = proc.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            # a run that never ends: where each of its threads waits, then the failure
            where = threads_of(proc.pid)
            proc.kill()
            proc.communicate()
            raise Failure("recon did not finish in %d s (RECON_NOW=%s): %s\n%s"
                          % (RUN_TIMEOUT, env["RECON_NOW"], " ".join(cmd), where))
        self.nruns += 1
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)

    def check(self, what, now):
        if not os.path.exists(os.path.join(self.wd, "state", "recon.db")):
            raise Failure("after %s: no state store" % what)
        items, tickets, mtickets, local = observe(self.wd)
        want_items = {k: v["class"] for k, v in self.oracle.items.items()}
        errs = diff_dicts("open item", want_items, items)
        errs += diff_dicts("ticket (state store)", self.oracle.tickets, tickets)
        errs += diff_dicts("ticket (recon_ticket)", self.oracle.tickets, mtickets)
        errs += diff_dicts("local row", self.oracle.local, local)
        if errs and self.triage is not None:
            kinds = {o.key: o.kind for o in self.h.orders}
            for k in sorted(set(want_items) | set(items)):
                w, g = want_items.get(k), items.get(k)
                if w == g:
                    continue
                ev = self.oracle.last_eval.get(k)
                hyp = ev and (g or "matched") == (ev[1] if ev[1] != "replay" else None)
                self.triage.append((what.split()[0], kinds.get(k), w, g,
                                    "own-window-only" if hyp else "-",
                                    self.h.seed, what, k))
            if not any(e.startswith("  open item") for e in errs):
                for e in errs:
                    self.triage.append((what.split()[0], "", e.strip(), "", "-", self.h.seed,
                                        what, ""))
            self.resync(items)
            return
        if errs:
            raise Failure("after %s (RECON_NOW=%s):\n%s" % (what, recon_now(now),
                                                            "\n".join(errs)))

    def resync(self, items):
        """Triage: adopt the engine's state and go on."""
        st = sqlite3.connect(os.path.join(self.wd, "state", "recon.db"))
        self.oracle.items = {}
        for k, c, ms in st.execute("SELECT key, class, opened_at_ms FROM items WHERE "
                                   "state = 'open' AND mode = 't1'"):
            since = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms) + SH
            self.oracle.items[k] = {"class": c, "since": since}
        st.close()
        _, tickets, _, local = observe(self.wd)
        self.oracle.tickets = tickets
        self.oracle.local = local

    def op(self, kind, day, now, dry):
        date = str(day_start(day).date())
        if kind == "run":
            args = ["run", "--date", date]
        else:
            args = ["rerun", "--from", date, "--to", date]
        what = "%s %s%s" % (kind, date, " --dry-run" if dry else "")
        self.say("%s (RECON_NOW=%s)" % (what, recon_now(now)))
        before = observe(self.wd) if dry else None
        p = self.recon_cmd(args + (["--dry-run"] if dry else []), now)
        if p.returncode != 0:
            raise Failure("%s exited %d:\n%s%s" % (what, p.returncode, p.stdout, p.stderr))
        if dry:
            self.oracle.count("dry run")
            after = observe(self.wd)
            if after != before:
                errs = []
                for name, b, a in zip(("open item", "ticket (state store)",
                                       "ticket (recon_ticket)", "local row"), before, after):
                    errs += diff_dicts(name, b, a)
                raise Failure("%s changed the state store or the local flow:\n%s" % (
                    what, "\n".join(errs)))
            return
        self.oracle.count(kind)
        self.oracle.run(day, self.current[day], now, False)
        if self.verbose:
            for k, v in sorted(self.oracle.items.items()):
                self.say("  expect open %s %s" % (k, v["class"]))
        self.check(what, now)

    def run(self):
        self.setup()
        now = None
        for kind, day, x in self.h.steps:
            if kind == "run":
                now = day_start(day + 1) + dt.timedelta(hours=10, minutes=30)
                self.sync_local(now, day)
                if x:
                    self.op("run", day, now, True)
                self.op("run", day, now, False)
            elif kind == "rerun":
                if day not in self.oracle.reconciled:
                    continue
                if x:
                    self.op("rerun", day, now, True)
                self.op("rerun", day, now, False)
            elif kind == "correct":
                self.correct(day, x)
                self.op("rerun", day, now, False)

    def correct(self, day, x):
        """The provider rewrites day's statement after its run. The line a mutation
        touches is picked by a score of its own (not by its position), so that --shrink,
        dropping other orders, keeps the same correction."""
        r = random.Random(int(x * 1e9))
        cur = self.current[day]
        truth = self.h.truth[day]

        def pick(cands):
            return min(cands, key=lambda i: (random.Random("%r %r" % (x, cur[i].ident()))
                                             .random(), i))

        keyed = [i for i, e in enumerate(cur) if e.type in ("PAYMENT", "REFUND")]
        idents = [e.ident() for e in cur]
        dups = [i for i, e in enumerate(cur) if idents.count(e.ident()) > 1]
        c = r.choice(["restore", "restore", "drop", "duplicate", "amount", "amount", "undup",
                      "undup"])
        delta = r.choice([-1, 1]) * r.randrange(1, 300)
        if (c in ("drop", "duplicate") and not cur) or (c == "amount" and not keyed) or \
                (c == "undup" and not dups):
            c = "restore"
        if c == "restore":
            new = [e.copy() for e in truth]
            desc = "restored to the true entries"
        elif c == "drop":
            i = pick(range(len(cur)))
            desc = "dropped %r" % cur[i]
            new = cur[:i] + cur[i + 1:]
        elif c == "duplicate":
            i = pick(range(len(cur)))
            desc = "listed %r twice" % cur[i]
            new = cur[:i + 1] + [cur[i].copy()] + cur[i + 1:]
        elif c == "undup":
            i = pick(dups)
            desc = "removed the second copy of %r" % cur[i]
            new = cur[:i] + cur[i + 1:]
        else:
            i = pick(keyed)
            e = cur[i].copy()
            e.amount = max(1, e.amount + delta)
            desc = "amount of %r changed to %s" % (cur[i], fmt_money(e.amount))
            new = cur[:i] + [e] + cur[i + 1:]
        self.current[day] = new
        self.write_statement(day)
        self.say("correct %s: %s" % (day_start(day).date(), desc))


def run_history(seed, recon, work_root, verbose=False, keep=False, only=None, triage=None):
    h = History(seed, only)
    wd = os.path.join(work_root, "seed-%d" % seed)
    r = Runner(h, recon, wd, verbose)
    r.triage = triage
    if verbose:
        print(h.describe(), flush=True)
    try:
        r.run()
    except Failure as e:
        return h, r, str(e)
    finally:
        if not keep:
            shutil.rmtree(wd, ignore_errors=True)
    return h, r, None


def shrink(seed, recon, work_root):
    """Drops orders one at a time while the history still fails."""
    h, r, err = run_history(seed, recon, work_root)
    if not err:
        return None
    keys = [o.key for o in h.orders]
    changed = True
    while changed:
        changed = False
        for k in list(keys):
            trial = [x for x in keys if x != k]
            if not trial:
                continue
            _, _, e2 = run_history(seed, recon, work_root, only=set(trial))
            if e2:
                keys = trial
                changed = True
    return keys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recon", default=os.path.join(SOURCE_DIR, "build", "recon"))
    ap.add_argument("--histories", type=int, default=200)
    ap.add_argument("--base", type=int, default=1, help="first seed (default 1)")
    ap.add_argument("--seed", type=int, help="run this one seed")
    ap.add_argument("--only", help="comma-separated keys: keep only these orders")
    ap.add_argument("--shrink", action="store_true", help="minimize a failing --seed")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--work", help="work folder (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the work folders")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--triage", action="store_true",
                    help="go on after a disagreement (adopting the engine's state) and count "
                         "the kinds of disagreement")
    a = ap.parse_args()
    if not os.access(a.recon, os.X_OK):
        print("ledger_model: no recon binary at %s" % a.recon, file=sys.stderr)
        return 2
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    work = a.work or tempfile.mkdtemp(prefix="recon-model-", dir=shm)
    os.makedirs(work, exist_ok=True)
    t0 = time.monotonic()
    try:
        if a.seed is not None:
            only = set(a.only.split(",")) if a.only else None
            if a.shrink:
                keys = shrink(a.seed, a.recon, work)
                if keys is None:
                    print("seed %d passes" % a.seed)
                    return 0
                only = set(keys)
                print("minimal: --only %s" % ",".join(sorted(keys)))
            h, r, err = run_history(a.seed, a.recon, work, a.verbose or a.shrink, a.keep, only)
            if err:
                print("FAIL seed %d: %s" % (a.seed, err))
                if not a.verbose:
                    print(h.describe())
                print("  reproduce: python3 tests/model/ledger_model.py --seed %d%s --recon %s -v"
                      % (a.seed, " --only " + ",".join(sorted(only)) if only else "", a.recon))
                return 1
            print("ok seed %d (%d runs, %.1f s)" % (a.seed, r.nruns, time.monotonic() - t0))
            return 0
        if a.triage:
            tri = []
            for s in range(a.base, a.base + a.histories):
                run_history(s, a.recon, work, False, False, None, tri)
            counts = {}
            for t in tri:
                counts.setdefault(t[:5], []).append("%d:%s:%s" % (t[5], t[6], t[7]))
            for sig, ex in sorted(counts.items(), key=lambda x: -len(x[1])):
                print("%4d %s  e.g. %s" % (len(ex), sig, " | ".join(ex[:3])))
            return 0
        seeds = list(range(a.base, a.base + a.histories))
        seeds += [s for s in REGRESSION_SEEDS if s not in seeds]
        fails = []
        nruns = 0
        cov = {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
            for seed, (h, r, err) in zip(seeds, ex.map(
                    lambda s: run_history(s, a.recon, work, False, a.keep), seeds)):
                nruns += r.nruns
                for k, v in r.oracle.cov.items():
                    cov[k] = cov.get(k, 0) + v
                if err:
                    fails.append(seed)
                    print("FAIL seed %d: %s" % (seed, err))
                    print("  reproduce: python3 tests/model/ledger_model.py --seed %d "
                          "--recon %s -v" % (seed, a.recon))
        took = time.monotonic() - t0
        print("%d histories (seeds %d..%d%s), %d recon runs, %d failed, %.1f s" % (
            len(seeds), a.base, a.base + a.histories - 1,
            " + %d regression" % (len(seeds) - a.histories) if len(seeds) > a.histories else "",
            nruns, len(fails), took))
        print("exercised: " + ", ".join("%s %d" % kv for kv in sorted(cov.items())))
        if fails:
            print("failing seeds: %s" % " ".join(map(str, fails)))
        return 1 if fails else 0
    finally:
        if not a.keep and not a.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
