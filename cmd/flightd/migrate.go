package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore/kafkalog"
	"github.com/flightd/flightd/tiering"
)

// migrateHint is the fix CheckLog names when the warehouse's tables keep
// their un-tiered rows in another log than cfg's.
func migrateHint(cfg Config) string {
	return "stop this server and run `flightd log migrate --to " + cfg.Log +
		"` with the flags that served those tables (their --log first): it drains the tables' logs into the lake and moves them to the new log; or start this server with the log they are on"
}

// logCmd runs `flightd log SUBCOMMAND`.
func logCmd(args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "migrate" {
		return errors.New("usage: flightd log migrate --to badger|kafka://host:port[,host:port] [serve flags of the log the tables are on now]")
	}
	return migrate(args[1:], out)
}

// logID returns the logstore.Description.ID of a --log value with cfg's
// Kafka settings.
func logID(log string, cfg Config) string {
	if log == "badger" {
		return "badger"
	}
	return kafkalog.ID(cfg.KafkaTopicPrefix)
}

// migrate moves every lake-stream enabled table on the log that cfg's --log
// names to the log --to names: it drains each table's log into the lake
// and starts it on the new log (see lakestream.MoveLog). The server must be
// stopped: nothing else may write to those logs meanwhile.
func migrate(args []string, out io.Writer) error {
	// --to and --to-kafka-topic-prefix are migrate's own; the rest are
	// serve's flags, describing the log the tables are on now.
	to, rest := takeFlag(args, "to")
	toPrefix, rest := takeFlag(rest, "to-kafka-topic-prefix")
	cfg, err := parseServe(rest)
	if err != nil {
		return err
	}
	target := cfg
	target.Log = to
	if toPrefix != "" {
		target.KafkaTopicPrefix = toPrefix
	}
	if to == "" {
		return errors.New("flightd log migrate: --to is required: badger or kafka://host:port[,host:port]")
	}
	if err := target.LogConfig.validate(); err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	from, dest := logID(cfg.Log, cfg), logID(target.Log, target)
	if from == dest {
		return fmt.Errorf("flightd log migrate: --log %s and --to %s are the same log (%s); nothing to move", cfg.Log, to, from)
	}
	lg := newLogger(cfg.LogLevel)
	ctx := context.Background()
	octx, cancel := context.WithTimeout(ctx, time.Minute)
	cat, err := openWarehouse(octx, cfg.Warehouse, cfg.S3Options())
	cancel()
	if err != nil {
		return fmt.Errorf("open warehouse %s: %w", cfg.Warehouse, err)
	}
	var ls *lakestream.Service
	octx, cancel = context.WithTimeout(ctx, time.Minute)
	log, err := openLog(octx, cfg, lg, func(id string) (string, string, int) { return ls.TableOfLog(id) }, false)
	cancel()
	if err != nil {
		return err
	}
	defer log.Close()
	ls = lakestream.New(cat, log, lakestream.Options{Logger: lg.With("component", "lakestream")})
	tier := tiering.New(ls, tiering.Options{Interval: cfg.TieringInterval, MaxRowsPerRound: cfg.TieringRows, Retention: cfg.LogRetention, Logger: lg.With("component", "tiering")})
	dbs, err := cat.ListDatabases(ctx)
	if err != nil {
		return err
	}
	moved, skipped := 0, 0
	for _, db := range dbs {
		names, err := cat.ListTables(ctx, db)
		if err != nil {
			return err
		}
		for _, name := range names {
			t, err := cat.GetTable(ctx, db, name)
			if errors.Is(err, lake.ErrTableNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if !lakestream.Realtime(t) || lakestream.LogOf(t) == dest {
				continue
			}
			if lakestream.LogOf(t) != from {
				fmt.Fprintf(out, "%s.%s: on the %s log, neither --log nor --to: left alone\n", db, name, lakestream.LogOf(t))
				skipped++
				continue
			}
			start := time.Now()
			if err := ls.MoveLog(ctx, db, name, dest, tier.Drain); err != nil {
				return fmt.Errorf("move %s.%s to %s: %w (tables moved so far stay moved; run the command again to go on)", db, name, dest, err)
			}
			fmt.Fprintf(out, "%s.%s: drained into the lake and moved to the %s log (%s)\n", db, name, dest, time.Since(start).Round(time.Millisecond))
			moved++
		}
	}
	fmt.Fprintf(out, "moved %d table(s) from the %s log to the %s log", moved, from, dest)
	if skipped > 0 {
		fmt.Fprintf(out, "; %d on other logs left alone", skipped)
	}
	fmt.Fprintf(out, "\nnow start the server with --log %s\n", to)
	return nil
}

// takeFlag removes -name/--name V and -name=V/--name=V from args and
// returns the last value given (or "").
func takeFlag(args []string, name string) (string, []string) {
	var v string
	var rest []string
	for i := 0; i < len(args); i++ {
		a := strings.TrimPrefix(strings.TrimPrefix(args[i], "-"), "-")
		switch {
		case a == name && i+1 < len(args) && strings.HasPrefix(args[i], "-"):
			v = args[i+1]
			i++
		case strings.HasPrefix(a, name+"=") && strings.HasPrefix(args[i], "-"):
			v = strings.TrimPrefix(a, name+"=")
		default:
			rest = append(rest, args[i])
		}
	}
	return v, rest
}
