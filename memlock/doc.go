// Package memlock is an in-memory lock service for tests.
package memlock
