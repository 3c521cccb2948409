// bench/duckdb.mjs: the DuckDB baseline of bench/run (Node.js, @duckdb/node-api).
//
//   node duckdb.mjs STATEMENT.CSV LOCAL.CSV CLASSIFY.SQL [THREADS]
//
// An in-memory database; two read_csv calls (every column read as text,
// all_varchar=true; the statement amount cast to DECIMAL(18,2), then to cents)
// and bench/classify.sql's FULL OUTER JOIN with its classifying CASE, on
// THREADS threads (default 2). Prints "class count" lines, as the others do.
// Run from the folder @duckdb/node-api was installed in (bench/run does that).
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const [up, local, classify, threads = '2'] = process.argv.slice(2);
const lit = (s) => `'${s.replaceAll("'", "''")}'`;
const csv = (path) =>
	`read_csv(${lit(path)}, header = true, all_varchar = true, delim = ',', quote = '"')`;
const sql = readFileSync(classify, 'utf8')
	.split('\n')
	.filter((l) => !l.startsWith('--'))
	.join('\n')
	.replace('AMOUNT_UP', 'CAST(CAST(u.amount AS DECIMAL(18,2)) * 100 AS BIGINT)')
	.replace('<> l.amount_cents', '<> CAST(l.amount_cents AS BIGINT)')
	.replace("l.created_at < '2024-03-02 05:45:00'",
		"CAST(l.created_at AS TIMESTAMP) < TIMESTAMP '2024-03-02 05:45:00'")
	.replace('FROM up u FULL OUTER JOIN loc l',
		`FROM ${csv(up)} u FULL OUTER JOIN ${csv(local)} l`)
	.replace(/;\s*$/, '');

const db = await DuckDBInstance.create(':memory:', { threads: String(threads) });
const con = await db.connect();
const t0 = process.hrtime.bigint();
const reader = await con.runAndReadAll(sql);
const ms = Number(process.hrtime.bigint() - t0) / 1e6;
for (const [klass, n] of reader.getRows())
	console.log(`${klass} ${n}`);
console.error(`duckdb: query ${(ms / 1000).toFixed(3)} s`);
