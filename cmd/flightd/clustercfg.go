package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"regexp"
	"time"

	"github.com/flightd/flightd/lake/fileio"
)

// ClusterConfig makes the server one node of several over one warehouse
// and one Kafka log (see package cluster).
type ClusterConfig struct {
	NodeID         string        // "": the only node
	Advertise      string        // the node's address for clients, grpc[+tls]://host:port
	SessionTimeout time.Duration // a node silent this long loses its tables to the others
}

func defaultClusterConfig() ClusterConfig {
	return ClusterConfig{SessionTimeout: 10 * time.Second}
}

func (c *ClusterConfig) env() error {
	if v := os.Getenv("FLIGHTD_NODE_ID"); v != "" {
		c.NodeID = v
	}
	if v := os.Getenv("FLIGHTD_ADVERTISE_ADDRESS"); v != "" {
		c.Advertise = v
	}
	if v := os.Getenv("FLIGHTD_CLUSTER_SESSION_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("FLIGHTD_CLUSTER_SESSION_TIMEOUT=%q: %w", v, err)
		}
		c.SessionTimeout = d
	}
	return nil
}

func (c *ClusterConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.NodeID, "node-id", c.NodeID, "run as one node of several over one warehouse and one Kafka log (needs --log kafka://...): a name unique among them, [A-Za-z0-9._-]{1,64} (env FLIGHTD_NODE_ID)")
	fs.StringVar(&c.Advertise, "advertise-address", c.Advertise, "this node's address as clients reach it, grpc://host:port or grpc+tls://host:port; default from --listen (env FLIGHTD_ADVERTISE_ADDRESS)")
	fs.DurationVar(&c.SessionTimeout, "cluster-session-timeout", c.SessionTimeout, "a node that has not reached Kafka for this long loses the tables it tiers to the other nodes (env FLIGHTD_CLUSTER_SESSION_TIMEOUT)")
}

var nodeIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// validate checks the cluster settings against the rest of cfg.
func (c ClusterConfig) validate(cfg *Config) error {
	if c.NodeID == "" {
		if c.Advertise != "" {
			return errors.New("--advertise-address needs --node-id: it is what other nodes tell clients")
		}
		return nil
	}
	if !nodeIDPattern.MatchString(c.NodeID) {
		return fmt.Errorf("--node-id %q: want 1 to 64 of [A-Za-z0-9._-]", c.NodeID)
	}
	if cfg.Log == "badger" {
		return fmt.Errorf("--node-id %s needs --log kafka://host:port: the nodes share the un-tiered writes through Kafka, and the embedded log lives on one machine", c.NodeID)
	}
	if c.SessionTimeout < 6*time.Second || c.SessionTimeout > 5*time.Minute {
		return fmt.Errorf("--cluster-session-timeout %s: want 6s to 5m (Kafka's group.min.session.timeout.ms is 6s by default)", c.SessionTimeout)
	}
	if c.Advertise != "" {
		u, err := url.Parse(c.Advertise)
		if err != nil || (u.Scheme != "grpc" && u.Scheme != "grpc+tls" && u.Scheme != "grpc+tcp") || u.Host == "" {
			return fmt.Errorf("--advertise-address %q: want grpc://host:port or grpc+tls://host:port", c.Advertise)
		}
		if _, port, err := net.SplitHostPort(u.Host); err != nil || port == "" {
			return fmt.Errorf("--advertise-address %q: want a host and a port", c.Advertise)
		}
	}
	return nil
}

// advertise returns the node's client address: --advertise-address, or
// one made from --listen (a wildcard host becomes the machine's name).
func (c ClusterConfig) advertise(cfg *Config) string {
	if c.Advertise != "" {
		return c.Advertise
	}
	scheme := "grpc"
	if cfg.TLSCert != "" {
		scheme = "grpc+tls"
	}
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return scheme + "://" + cfg.Listen
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

func (c ClusterConfig) String() string {
	if c.NodeID == "" {
		return ""
	}
	return fmt.Sprintf("--node-id=%s --advertise-address=%s --cluster-session-timeout=%s", c.NodeID, c.Advertise, c.SessionTimeout)
}

// checkConditionalWrites makes sure the warehouse's store refuses to create
// an object that exists (S3's If-None-Match: *; link(2) locally): with
// several nodes, that refusal is the only fence between two snapshot
// commits. It creates a probe object twice and removes it.
func checkConditionalWrites(ctx context.Context, fio fileio.FileIO, warehouse, node string) error {
	probe := fmt.Sprintf("_flightd/conditional-write-probe.%s.%d", node, time.Now().UnixNano())
	if err := fio.CreateExclusive(ctx, probe, []byte("probe")); err != nil {
		return fmt.Errorf("--node-id: check that the warehouse %s refuses to overwrite on create: %w", warehouse, err)
	}
	defer func() { _ = fio.Remove(context.WithoutCancel(ctx), probe) }()
	err := fio.CreateExclusive(ctx, probe, []byte("again"))
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil
	case err == nil:
		return fmt.Errorf("--node-id: the warehouse %s let a create overwrite an existing object: its store does not honour conditional writes (S3 If-None-Match: *), so two nodes could both commit the same snapshot. Use a store that does (AWS S3, Versity S3 Gateway 1.8 or later), or run a single node", warehouse)
	default:
		return fmt.Errorf("--node-id: check that the warehouse %s refuses to overwrite on create: %w", warehouse, err)
	}
}
