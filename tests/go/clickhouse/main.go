// Command chgo runs the dashboards' queries and a batch insert through clickhouse-go over HTTP,
// as Grafana's ClickHouse plugin does, against the server named in the plan file.
//
//	go run . plan.json > result.json
//
// The plan (written by tests/integration/stack/test_clickhouse_go.py) holds the queries with
// Grafana's macros already expanded, so the expansion lives in one place (tests/grafana_macros.py).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

type plan struct {
	Addr     string  `json:"addr"`
	User     string  `json:"user"`
	Password string  `json:"password"`
	Database string  `json:"database"`
	Queries  []query `json:"queries"`
}

type query struct {
	Name string `json:"name"`
	SQL  string `json:"sql"`
}

type queryResult struct {
	Name        string   `json:"name"`
	Compression string   `json:"compression"`
	Rows        int      `json:"rows"`
	Types       []string `json:"types"`
	FirstColumn []string `json:"first_column"`
}

type result struct {
	ServerVersion string            `json:"server_version"`
	Queries       []queryResult     `json:"queries"`
	Errors        map[string]string `json:"errors"`
	InsertedRows  int               `json:"inserted_rows"`
	ReadBackRows  int               `json:"read_back_rows"`
}

// The ways clickhouse-go asks for a compressed answer over HTTP: compress=1 (ClickHouse's block
// framing), Accept-Encoding, or none at all.
var compressions = map[string]*clickhouse.Compression{
	"none": {Method: clickhouse.CompressionNone},
	"lz4":  {Method: clickhouse.CompressionLZ4},
	"zstd": {Method: clickhouse.CompressionZSTD},
	"gzip": {Method: clickhouse.CompressionGZIP, Level: 3},
	"br":   {Method: clickhouse.CompressionBrotli, Level: 3},
}

func main() {
	if len(os.Args) != 2 {
		fail("usage: chgo plan.json")
	}
	raw, err := os.ReadFile(os.Args[1])
	check(err, "read plan")
	var p plan
	check(json.Unmarshal(raw, &p), "parse plan")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	out := result{Errors: map[string]string{}}
	for _, name := range []string{"none", "lz4", "zstd", "gzip", "br"} {
		conn := open(p, compressions[name])
		if out.ServerVersion == "" {
			v, err := conn.ServerVersion()
			check(err, "server version")
			out.ServerVersion = v.String()
		}
		for _, q := range p.Queries {
			out.Queries = append(out.Queries, run(ctx, conn, q, name))
		}
		// The server's error must reach the caller readable, whatever the compression. (Query,
		// not Exec: Exec sends no compress=1 yet reads an error body as compressed blocks.)
		if rows, err := conn.Query(ctx, "SELECT no_such_column"); err != nil {
			out.Errors[name] = err.Error()
		} else {
			check(rows.Close(), "close")
		}
		check(conn.Close(), "close")
	}
	conn := open(p, compressions["lz4"])
	out.InsertedRows, out.ReadBackRows = batchInsert(ctx, conn)
	check(conn.Close(), "close")
	check(json.NewEncoder(os.Stdout).Encode(out), "write result")
}

func open(p plan, compression *clickhouse.Compression) driver.Conn {
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:        []string{p.Addr},
		Protocol:    clickhouse.HTTP,
		Auth:        clickhouse.Auth{Database: p.Database, Username: p.User, Password: p.Password},
		Compression: compression,
		DialTimeout: 10 * time.Second,
	})
	check(err, "open")
	check(conn.Ping(context.Background()), "ping")
	return conn
}

// run scans every column of every row into the Go type the driver chose for it.
func run(ctx context.Context, conn driver.Conn, q query, compression string) queryResult {
	rows, err := conn.Query(ctx, q.SQL)
	check(err, q.Name)
	defer rows.Close()
	res := queryResult{Name: q.Name, Compression: compression, FirstColumn: []string{}}
	columns := rows.ColumnTypes()
	for _, c := range columns {
		res.Types = append(res.Types, c.DatabaseTypeName())
	}
	for rows.Next() {
		dest := make([]any, len(columns))
		for i, c := range columns {
			dest[i] = reflect.New(c.ScanType()).Interface()
		}
		check(rows.Scan(dest...), q.Name+": scan")
		res.Rows++
		if len(dest) > 0 {
			res.FirstColumn = append(res.FirstColumn, fmt.Sprint(reflect.ValueOf(dest[0]).Elem().Interface()))
		}
	}
	check(rows.Err(), q.Name+": rows")
	return res
}

type sample struct {
	ID    uint64            `ch:"id"`
	Name  string            `ch:"name"`
	At    time.Time         `ch:"at"`
	Tags  []string          `ch:"tags"`
	Value *float64          `ch:"value"`
	Attrs map[string]uint32 `ch:"attrs"`
}

func batchInsert(ctx context.Context, conn driver.Conn) (int, int) {
	check(conn.Exec(ctx, "DROP TABLE IF EXISTS go_batch"), "drop go_batch")
	check(conn.Exec(ctx, `CREATE TABLE go_batch (
		id UInt64, name String, at DateTime64(3, 'UTC'), tags Array(LowCardinality(String)),
		value Nullable(Float64), attrs Map(String, UInt32)
	) ENGINE = MergeTree ORDER BY id`), "create go_batch")
	base := time.Now().UTC().Truncate(time.Millisecond)
	want := make([]sample, 0, 1000)
	for i := 0; i < 1000; i++ {
		var v *float64
		if i%3 != 0 {
			f := float64(i) / 4
			v = &f
		}
		want = append(want, sample{
			ID: uint64(i), Name: fmt.Sprintf("row-%d", i), At: base.Add(time.Duration(i) * time.Second),
			Tags: []string{"a", fmt.Sprintf("t%d", i%7)}, Value: v,
			Attrs: map[string]uint32{"k": uint32(i)},
		})
	}
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO go_batch")
	check(err, "prepare batch")
	for _, s := range want {
		check(batch.Append(s.ID, s.Name, s.At, s.Tags, s.Value, s.Attrs), "append")
	}
	check(batch.Send(), "send batch")

	var got []sample
	check(conn.Select(ctx, &got, "SELECT id, name, at, tags, value, attrs FROM go_batch ORDER BY id"), "read back")
	if len(got) != len(want) {
		fail(fmt.Sprintf("read back %d rows, inserted %d", len(got), len(want)))
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.ID != g.ID || w.Name != g.Name || !w.At.Equal(g.At) || !reflect.DeepEqual(w.Tags, g.Tags) ||
			!reflect.DeepEqual(w.Value, g.Value) || !reflect.DeepEqual(w.Attrs, g.Attrs) {
			fail(fmt.Sprintf("row %d differs: inserted %+v, read %+v", i, w, g))
		}
	}
	return len(want), len(got)
}

func check(err error, what string) {
	if err != nil {
		fail(fmt.Sprintf("%s: %v", what, err))
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "chgo:", msg)
	os.Exit(1)
}
