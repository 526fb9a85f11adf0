//go:build deps

// Package deps pins the modules the engines and tests use while they are
// being written, so parallel work does not race on go.mod. Removed once
// every module is imported for real.
package deps

import (
	_ "github.com/Shopify/toxiproxy/v2"
	_ "github.com/anishathalye/porcupine"
	_ "github.com/go-sql-driver/mysql"
	_ "github.com/go-zookeeper/zk"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/redis/go-redis/v9"
	_ "go.etcd.io/etcd/client/v3"
	_ "go.etcd.io/etcd/client/v3/concurrency"
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "go.uber.org/goleak"
	_ "modernc.org/sqlite"
)
