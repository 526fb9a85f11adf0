// Package bridge joins the root package baton and package engine without
// exporting plumbing from either: the root installs its constructor here
// at init, package engine fills the registry, and neither imports the
// other's unexported names. It imports only the standard library, so the
// root package still depends on nothing outside it.
package bridge

import (
	"context"
	"sync"
	"time"
)

// Options are baton.Open's options as the root collects them. Observer is
// a baton.Observer (this package cannot name the root's types).
type Options struct {
	TTL            time.Duration
	TokenFloor     uint64
	ConnectTimeout time.Duration
	Observer       any
	Program        string
	Labels         map[string]string
	Getenv         func(string) string
	TLSServerName  string
}

// Driver is a scheme's engine: Open returns an engine.Conn as any,
// Check checks a URL offline.
type Driver struct {
	Open  func(ctx context.Context, url string, o *Options) (conn any, engine string, err error)
	Check func(url string, o *Options) error
	Lists bool
	Warn  func(url string, getenv func(string) string) string
}

var (
	mu      sync.RWMutex
	openers = map[string]Driver{}
)

// Register records the driver of scheme; it panics on a second registration
// of one scheme, as database/sql does for a driver name.
func Register(scheme string, open Driver) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := openers[scheme]; dup {
		panic("baton: scheme " + scheme + " registered twice")
	}
	openers[scheme] = open
}

// Lookup returns scheme's driver.
func Lookup(scheme string) (Driver, bool) {
	mu.RLock()
	defer mu.RUnlock()
	o, ok := openers[scheme]
	return o, ok
}

// Lists reports whether scheme's engine lists its lock names.
func Lists(scheme string) bool {
	d, ok := Lookup(scheme)
	return ok && d.Lists
}

// Warning is the warning of url's engine about how url reaches its
// servers; "" when there is none or no engine serves url's scheme.
func Warning(scheme, url string, getenv func(string) string) string {
	d, ok := Lookup(scheme)
	if !ok || d.Warn == nil {
		return ""
	}
	return d.Warn(url, getenv)
}

// Schemes lists the registered schemes, in no order.
func Schemes() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(openers))
	for s := range openers {
		out = append(out, s)
	}
	return out
}

// NewClient is set by the root package at init: it wraps an engine.Conn
// (given as any) into a *baton.Client (returned as any).
var NewClient func(conn any, engine string) any
