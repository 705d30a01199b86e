package main

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseInterleaved(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		args   []string
		pos    []string
		format string
	}{
		{name: "flags first", args: []string{"--format", "csv", "SELECT 1"}, pos: []string{"SELECT 1"}, format: "csv"},
		{name: "flags after", args: []string{"SELECT 1", "--format", "csv", "out.csv"}, pos: []string{"SELECT 1", "out.csv"}, format: "csv"},
		{name: "after -- all positional", args: []string{"--", "-x", "--format", "csv"}, pos: []string{"-x", "--format", "csv"}},
		{name: "none", args: nil, pos: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			format := fs.String("format", "", "")
			pos, err := parseInterleaved(fs, tc.args)
			require.NoError(t, err)
			require.Equal(t, tc.pos, pos)
			require.Equal(t, tc.format, *format)
		})
	}
}
