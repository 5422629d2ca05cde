-- sqlite3: a table filled by a recursive query, an index, joins and aggregates.
CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000)
INSERT INTO t SELECT x, x % 97, printf('value-%d', x * 7) FROM c;
CREATE INDEX t_k ON t(k);
SELECT k, count(*), sum(length(v)) FROM t GROUP BY k ORDER BY k LIMIT 5;
SELECT count(*) FROM t a JOIN t b ON a.k = b.k AND b.id = a.id + 97;
SELECT group_concat(v, ',') FROM (SELECT v FROM t WHERE k = 3 ORDER BY id LIMIT 4);
DELETE FROM t WHERE k > 10;
VACUUM;
SELECT count(*), max(id) FROM t;
