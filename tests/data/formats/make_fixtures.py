#!/usr/bin/env python3
"""Writes the provider statement fixtures of tests/cases/{wechatpay,alipay,stripe}_*
from the layouts documented in reference/statement-formats.md. The outputs are
committed; rerun after editing: python3 tests/data/formats/make_fixtures.py

WeChat: UTF-8 + BOM, CRLF, backtick-guarded cells, raw commas in product names,
two-line summary trailer (27 columns; also the older 24-column layout).
Alipay: GBK, '#' header/footer, trailing-TAB cells, 退款 rows negative, footer
totals; also zipped with GBK member names (no UTF-8 flag) next to the 汇总 file.
Stripe: RFC 4180 quoting, columns in a custom order, lowercase currency.
"""
import os
import shutil
import struct
import subprocess
import tempfile
import zlib
from decimal import Decimal

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
CASES = os.path.join(ROOT, "tests", "cases")
D2 = Decimal("0.01")


def out(case, rel, data):
    path = os.path.join(CASES, case, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


# ---- WeChat Pay -----------------------------------------------------------

WX27 = ("交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,"
        "交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,"
        "充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,"
        "费率备注").split(",")
WX24 = ("交易时间,公众账号ID,商户号,子商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,"
        "交易状态,付款银行,货币种类,总金额,代金券或立减优惠金额,微信退款单号,商户退款单号,退款金额,"
        "代金券或立减优惠退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率").split(",")


def fee(amount):
    return (Decimal(amount) * Decimal("0.006")).quantize(Decimal("0.00001"))


def wx_row(time, txn, key, state, order="0.00", settle=None, coupon="0.00", refund_id="0",
           mrefund="0", refund="0.00", name="商品", layout=WX27):
    settle = order if settle is None else settle
    is_refund = state == "REFUND"
    cells = {
        "交易时间": time, "公众账号ID": "wx2421b1c4370ec43b", "商户号": "10000100",
        "特约商户号": "0", "子商户号": "0", "设备号": "", "微信订单号": txn, "商户订单号": key,
        "用户标识": "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o", "交易类型": "JSAPI", "交易状态": state,
        "付款银行": "CMB_DEBIT", "货币种类": "CNY",
        "应结订单金额": "0.00" if is_refund else settle,
        "代金券金额": coupon, "微信退款单号": refund_id, "商户退款单号": mrefund,
        "退款金额": refund, "充值券退款金额": "0.00",
        "退款类型": "ORIGINAL" if is_refund else "", "退款状态": "SUCCESS" if is_refund else "",
        "商品名称": name, "商户数据包": "", "手续费": str(fee(settle if not is_refund else "0")),
        "费率": "0.60%", "订单金额": "0.00" if is_refund else order,
        "申请退款金额": refund, "费率备注": "",
        "总金额": "0.00" if is_refund else order, "代金券或立减优惠金额": coupon,
        "代金券或立减优惠退款金额": "0.00",
    }
    return [cells[c] for c in layout]


def wx_bill(rows, layout=WX27, trailer=True):
    lines = [",".join(layout)]
    lines += [",".join("`" + c for c in r) for r in rows]
    if trailer:
        col = {c: i for i, c in enumerate(layout)}

        def total(c, places=2):
            return str(sum((Decimal(r[col[c]]) for r in rows), Decimal(0))
                       .quantize(Decimal(1).scaleb(-places)))
        if layout is WX27:
            names = ["总交易单数", "应结订单总金额", "退款总金额", "充值券退款总金额", "手续费总金额",
                     "订单总金额", "申请退款总金额"]
            vals = [str(len(rows)), total("应结订单金额"), total("退款金额"), total("充值券退款金额"),
                    total("手续费", 5), total("订单金额"), total("申请退款金额")]
        else:
            names = ["总交易单数", "总交易额", "总退款金额", "总代金券或立减优惠退款金额", "手续费总金额"]
            vals = [str(len(rows)), total("总金额"), total("退款金额"), total("代金券或立减优惠退款金额"),
                    total("手续费", 5)]
        lines.append(",".join(names))
        lines.append(",".join("`" + v for v in vals))
    return ("\ufeff" + "\r\n".join(lines) + "\r\n").encode("utf-8")


def wechat():
    d = "2024-01-16 "
    T = "42000020862024011607459640"  # + 2 digits: 28-digit 微信订单号
    R = "503000000120240116000000"    # + 2 digits: refund ids
    rows = [
        wx_row(d + "00:00:00", T + "01", "W-MIN", "SUCCESS", "0.01"),
        wx_row(d + "08:00:00", T + "02", "00012345", "SUCCESS", "100.00"),
        wx_row(d + "23:59:59", T + "03", "1234567890123456789", "SUCCESS", "21474836.47"),
        wx_row(d + "09:00:00", T + "04", "K", "SUCCESS", "5.00"),
        wx_row(d + "09:00:01", T + "05", "K0", "SUCCESS", "6.00"),
        wx_row(d + "09:30:00", T + "06", "  PAD-1  ", "SUCCESS", "8.00"),
        wx_row(d + "10:00:00", T + "07", "COUP-1", "SUCCESS", "10.00", settle="8.00",
               coupon="2.00", name="T-shirt, blue, size M"),
        wx_row(d + "11:00:00", T + "08", "REF-FULL", "SUCCESS", "20.00"),
        wx_row(d + "15:00:00", T + "08", "REF-FULL", "REFUND", refund_id=R + "01",
               mrefund="RF-1", refund="20.00"),
        wx_row(d + "11:10:00", T + "09", "REF-PART", "SUCCESS", "30.00"),
        wx_row(d + "16:00:00", T + "09", "REF-PART", "REFUND", refund_id=R + "02",
               mrefund="RF-2", refund="5.00"),
        wx_row(d + "17:00:00", T + "09", "REF-PART", "REFUND", refund_id=R + "03",
               mrefund="RF-3", refund="5.00"),
        wx_row(d + "11:20:00", T + "10", "REF-SM", "SUCCESS", "40.00"),
        wx_row(d + "18:00:00", T + "10", "REF-SM", "REFUND", refund_id=R + "04",
               mrefund="RF-4", refund="40.00"),
        wx_row(d + "12:00:00", T + "11", "REV-1", "SUCCESS", "12.00"),
        wx_row(d + "12:01:00", T + "11", "REV-1", "REVOKED", "12.00"),
        wx_row(d + "13:00:00", T + "12", "AMT-1", "SUCCESS", "50.00"),
        wx_row(d + "14:00:00", T + "13", "DUP-1", "SUCCESS", "9.00"),
        wx_row(d + "14:00:00", T + "13", "DUP-1", "SUCCESS", "9.00"),
        wx_row(d + "14:30:00", T + "14", "STUCK-1", "SUCCESS", "7.00"),
    ]
    out("wechatpay_bill", "statements/2024-01-16.csv", wx_bill(rows))
    old = [
        wx_row(d + "00:00:00", T + "21", "OLD-1", "SUCCESS", "1.00", layout=WX24),
        wx_row(d + "10:00:00", T + "22", "OLD-2", "SUCCESS", "2.00", layout=WX24,
               name="mug, large"),
        wx_row(d + "12:00:00", T + "22", "OLD-2", "REFUND", refund_id=R + "21", mrefund="RF-21",
               refund="2.00", layout=WX24),
        wx_row(d + "23:59:59", T + "23", "OLD-3", "SUCCESS", "3.00", layout=WX24),
    ]
    out("wechatpay_bill_v24", "statements/2024-01-16.csv", wx_bill(old, layout=WX24))


# ---- Alipay ---------------------------------------------------------------

ALI_HEAD = ("支付宝交易号,商户订单号,业务类型,商品名称,创建时间,完成时间,门店编号,门店名称,操作员,终端号,"
            "对方账户,订单金额（元）,商家实收（元）,支付宝红包（元）,集分宝（元）,支付宝优惠（元）,"
            "商家优惠（元）,券核销金额（元）,券名称,商家红包消费金额（元）,卡消费金额（元）,"
            "退款批次号/请求号,服务费（元）,分润（元）,备注")


def ali_row(txn, key, kind, created, done, order, received, refund_no=""):
    mdisc = (Decimal(order) - Decimal(received)).quantize(D2)
    cells = [txn + "\t", key + "\t", kind + "\t", "下单测试，蓝色", created, done,
             "alipay_store\t", "", "\t", "\t", "*津水(602***@qq.com)\t", order, received,
             "0.00", "0.00", "0.00", str(mdisc), "", "", "0.00\t", "0.00",
             refund_no + "\t", "0.00", "0.00", "下单测试"]
    return ",".join(cells)


def ali_bill(rows_meta):
    rows = [ali_row(*r) for r in rows_meta]
    pays = [r for r in rows_meta if r[2] == "交易"]
    refs = [r for r in rows_meta if r[2] == "退款"]
    s = lambda rs, i: str(sum((Decimal(r[i]) for r in rs), Decimal(0)).quantize(D2))
    disc = lambda rs: str(sum((Decimal(r[5]) - Decimal(r[6]) for r in rs), Decimal(0))
                          .quantize(D2))
    lines = ["#支付宝业务明细查询", "#账号：[20880211096256330156]",
             "#起始日期：[2024年01月16日 00:00:00]   终止日期：[2024年01月17日 00:00:00]",
             "#-----------------------------------------业务明细列表----------------------------------------",
             ALI_HEAD] + rows + [
             "#-----------------------------------------业务明细列表结束------------------------------------",
             "#交易合计：%d笔，商家实收共%s元，商家优惠共%s元" % (len(pays), s(pays, 6), disc(pays)),
             "#退款合计：%d笔，商家实收退款共%s元，商家优惠退款共%s元" % (len(refs), s(refs, 6), disc(refs)),
             "#导出时间：[2024年01月17日 05:46:49]"]
    return ("\r\n".join(lines) + "\r\n").encode("gbk")


def zip_member(name_bytes, data):
    return name_bytes, data, zlib.crc32(data)


def write_zip(members):
    """A zip with raw (GBK) member names and no UTF-8 flag, deflated."""
    local, central, off = b"", b"", 0
    for name, data, crc in members:
        co = zlib.compressobj(9, zlib.DEFLATED, -15)
        comp = co.compress(data) + co.flush()
        hdr = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x5821, crc, len(comp),
                          len(data), len(name), 0) + name
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x5821, crc,
                               len(comp), len(data), len(name), 0, 0, 0, 0, 0, off) + name
        local += hdr + comp
        off += len(hdr) + len(comp)
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central),
                      off, 0)
    return local + central + end


def alipay():
    c, t = "2024-01-16 ", "20240116220014588605"  # + 8 digits: 28-digit 支付宝交易号
    rows = [
        (t + "00000001", "A-MIN", "交易", c + "00:00:00", c + "00:00:00", "0.01", "0.01"),
        (t + "00000002", "000777", "交易", c + "08:00:00", c + "08:00:05", "100000000.00",
         "100000000.00"),
        (t + "00000003", "A-COUP", "交易", c + "09:00:00", c + "09:00:03", "10.00", "7.50"),
        (t + "00000004", "A-REF", "交易", c + "10:00:00", c + "10:00:02", "20.00", "20.00"),
        (t + "00000004", "A-REF", "退款", c + "10:00:00", c + "15:00:00", "-20.00", "-20.00",
         "2024011600001"),
        (t + "00000005", "A-PART", "交易", c + "11:00:00", c + "11:00:01", "30.00", "30.00"),
        (t + "00000005", "A-PART", "退款", c + "11:00:00", c + "16:00:00", "-10.00", "-10.00",
         "2024011600002"),
        (t + "00000006", "A-MISS", "交易", c + "12:00:00", c + "12:00:01", "6.00", "6.00"),
        (t + "00000007", "A-AMT", "交易", c + "13:00:00", c + "13:00:01", "50.00", "50.00"),
        (t + "00000008", "A-LATE", "交易", c + "23:59:58", c + "23:59:59", "8.00", "8.00"),
    ]
    bill = ali_bill(rows)
    out("alipay_bill", "statements/2024-01-16.csv", bill)
    summary = ("#支付宝业务汇总查询\r\n门店编号,门店名称,交易订单总笔数,退款订单总笔数,订单金额（元）,"
               "商家实收（元）,支付宝优惠（元）,商家优惠（元）,卡消费金额（元）,服务费（元）,分润（元）,"
               "实收净额（元）\r\n合计,,8,2,0.00,0.00,0.00,0.00,0.00,0.00,0.00,0.00\r\n").encode("gbk")
    z = write_zip([
        zip_member("20880211096256330156_20240116_业务明细(汇总).csv".encode("gbk"), summary),
        zip_member("20880211096256330156_20240116_业务明细.csv".encode("gbk"), bill),
    ])
    out("alipay_bill_zip", "statements/2088_20240116.zip", z)
    zip64("alipay_bill_zip64", "statements/2088_20240116.zip", [
        ("20880211096256330156_20240116_业务明细(汇总).csv".encode("gbk"), summary),
        ("20880211096256330156_20240116_业务明细.csv".encode("gbk"), bill),
    ])


def zip64(case, rel, members):
    """The same members zipped by Info-ZIP's zip with ZIP64 fields forced (-fz): what it
    and Python's zipfile write for a member over 4 GiB (2 GiB for Python). The central
    directory states 0xFFFFFFFF sizes with the real ones in the 0x0001 extra field, and
    the end record points through a ZIP64 locator. -X and a fixed mtime keep it the
    same from run to run. Skipped where zip is not installed."""
    if not shutil.which("zip"):
        print("zip not installed: %s not rewritten" % case)
        return
    with tempfile.TemporaryDirectory() as d:
        for name, data in members:
            path = os.path.join(d.encode(), name)
            with open(path, "wb") as f:
                f.write(data)
            os.utime(path, (1705420800, 1705420800))
        subprocess.run(["zip", "-q", "-X", "-fz", "-D", "out.zip"] +
                       [name for name, _ in members], cwd=d, check=True,
                       env=dict(os.environ, TZ="UTC"))
        with open(os.path.join(d, "out.zip"), "rb") as f:
            out(case, rel, f.read())


# ---- Stripe ---------------------------------------------------------------

def stripe():
    head = ["balance_transaction_id", "created_utc", "currency", "gross", "fee", "net",
            "reporting_category", "source_id", "description", "charge_id",
            "payment_metadata[merchant_order]", "customer_facing_currency"]
    rows = [
        ["txn_001", "2024-01-16 00:00:00", "usd", "0.01", "0.30", "-0.29", "charge", "ch_001",
         "Order S-MIN", "ch_001", "S-MIN", "usd"],
        ["txn_002", "2024-01-16 05:00:00", "usd", "999999.99", "29000.29", "970999.70",
         "charge", "ch_002", 'Order "big", one', "ch_002", "S-MAX", "usd"],
        ["txn_003", "2024-01-16 06:00:00", "usd", "25.00", "1.03", "23.97", "charge", "ch_003",
         "Order S-REF", "ch_003", "S-REF", "usd"],
        ["txn_004", "2024-01-16 07:00:00", "usd", "-25.00", "0.00", "-25.00", "refund",
         "re_004", "REFUND FOR CHARGE (Order S-REF)", "ch_003", "S-REF", "usd"],
        ["txn_005", "2024-01-16 08:00:00", "usd", "40.00", "1.46", "38.54", "charge", "ch_005",
         "Order S-PART", "ch_005", "S-PART", "usd"],
        ["txn_006", "2024-01-16 09:00:00", "usd", "-15.00", "0.00", "-15.00", "refund",
         "re_006", "REFUND FOR CHARGE (Order S-PART)", "ch_005", "S-PART", "usd"],
        ["txn_007", "2024-01-16 10:00:00", "usd", "-2.00", "0.00", "-2.00", "fee", "",
         "Radar fees", "", "", ""],
        ["txn_008", "2024-01-16 11:00:00", "usd", "-500.00", "0.00", "-500.00", "payout",
         "po_008", "STRIPE PAYOUT", "", "", ""],
        ["txn_009", "2024-01-16 12:00:00", "usd", "1.00", "0.00", "1.00", "adjustment", "",
         "Adjustment, manual", "", "", ""],
        ["txn_010", "2024-01-16 13:00:00", "usd", "12.00", "0.65", "11.35", "charge", "ch_010",
         "Order S-MISS", "ch_010", "S-MISS", "usd"],
        ["txn_011", "2024-01-16 23:59:59", "usd", "9.00", "0.56", "8.44", "charge", "ch_011",
         "Order S-LATE", "ch_011", "S-LATE", "usd"],
    ]

    def q(c):
        return '"' + c.replace('"', '""') + '"' if any(x in c for x in ',"\n') else c
    text = "\r\n".join(",".join(q(c) for c in r) for r in [head] + rows) + "\r\n"
    out("stripe_itemized", "statements/2024-01-16.csv", text.encode("utf-8"))


if __name__ == "__main__":
    wechat()
    alipay()
    stripe()
