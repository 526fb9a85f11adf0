package main_test

import "testing"

// TestSafeTransportWarning: ZooKeeper, etcd, Redis and Redlock hosts off
// this machine reached without TLS while credentials are given get one
// warning naming the TLS scheme; ZooKeeper there without digest auth gets
// one about the open ACL; TLS, or loopback hosts, get none. (192.0.2.1 is
// a documentation address: nothing answers.)
func TestSafeTransportWarning(t *testing.T) {
	const secret = "Pl41nT3xtPw"
	tests := []struct {
		name, url, want string
		env             []string
	}{
		{"zk no auth", "zk://192.0.2.1:2181/x", "open ACL (world:anyone)", nil},
		{"zk digest in plain text", "zk://u:" + secret + "@192.0.2.1:2181/x", "zk host 192.0.2.1 without TLS", nil},
		{"zk digest from the environment", "zk://192.0.2.1:2181/x", "use zk+tls://", []string{"BATON_ZK_USER=u", "BATON_ZK_PASSWORD=" + secret}},
		{"zk+tls no auth", "zk+tls://192.0.2.1:2281/x", "open ACL", nil},
		{"zk+tls digest", "zk+tls://u:" + secret + "@192.0.2.1:2281/x", "", nil},
		{"zk loopback no auth", "zk://127.0.0.1:1/x", "", nil},
		{"etcd user in plain text", "etcd://u:" + secret + "@192.0.2.1:2379", "use etcds://", nil},
		{"etcd no credentials", "etcd://192.0.2.1:2379", "", nil},
		{"etcds user", "etcds://u:" + secret + "@192.0.2.1:2379", "", nil},
		{"redis password in plain text", "redis://:" + secret + "@192.0.2.1:6379", "use rediss://", nil},
		{"redis password from the environment", "redis://192.0.2.1:6379", "use rediss://", []string{"BATON_REDIS_PASSWORD=" + secret}},
		{"rediss password", "rediss://:" + secret + "@192.0.2.1:6379", "", nil},
		{"redis loopback", "redis://:" + secret + "@127.0.0.1:1", "", nil},
		{"redlock password in plain text", "redlock://:" + secret + "@192.0.2.1:1,192.0.2.1:2,192.0.2.1:3", "use ?tls=true", nil},
		{"redlock tls", "redlock://:" + secret + "@192.0.2.1:1,192.0.2.1:2,192.0.2.1:3?tls=true", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { transportWarning(t, tt.url, tt.want, secret, tt.env) })
	}
}
