package flightsql

import (
	"strings"
	"testing"

	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// FuzzStatementTicket: a DoGet ticket, decoded as the Flight SQL server does
// (a google.protobuf.Any of a TicketStatementQuery) and then as flightd does
// (handle, NUL, SQL), never panics; what flightd encodes decodes to the
// same handle and SQL, and a decoded ticket encodes to one that decodes the
// same.
func FuzzStatementTicket(f *testing.F) {
	for _, s := range [][2]string{{"0123456789abcdef", "SELECT 1"}, {"h", ""}, {"", "SELECT '\x00'"}, {"h", "SELECT 1; -- \r\n"}} {
		tkt, err := encodeTicket(s[0], s[1])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tkt)
	}
	f.Add([]byte("\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(handle []byte) {
			h, sql := decodeTicket(handle)
			if strings.Contains(h, "\x00") {
				t.Fatalf("handle %q holds a NUL", h)
			}
			enc, err := encodeTicket(h, sql)
			if err != nil {
				t.Fatalf("encode %q %q: %v", h, sql, err)
			}
			var a anypb.Any
			var q pb.TicketStatementQuery
			if err := proto.Unmarshal(enc, &a); err != nil {
				t.Fatalf("ticket for %q %q: %v", h, sql, err)
			}
			if err := a.UnmarshalTo(&q); err != nil {
				t.Fatalf("ticket for %q %q: %v", h, sql, err)
			}
			h2, sql2 := decodeTicket(q.GetStatementHandle())
			if h2 != h || sql2 != sql {
				t.Fatalf("ticket for %q %q decodes as %q %q", h, sql, h2, sql2)
			}
		}
		check(b)
		var a anypb.Any
		if proto.Unmarshal(b, &a) != nil {
			return
		}
		var q pb.TicketStatementQuery
		if a.UnmarshalTo(&q) != nil {
			return
		}
		check(q.GetStatementHandle())
	})
}

// FuzzBearerToken: any bearer token is checked without panicking, and only
// ones signed for the configured user pass.
func FuzzBearerToken(f *testing.F) {
	a, err := NewPasswordAuth("flightd", "secret password", []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		f.Fatal(err)
	}
	good, err := a.Validate("flightd", "secret password")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good + "=")
	f.Add("Zmxp.")
	f.Add("..")
	f.Fuzz(func(t *testing.T, token string) {
		user, err := a.IsValid(token)
		if err != nil {
			return
		}
		if user != "flightd" {
			t.Fatalf("token %q accepted for user %q", token, user)
		}
	})
}
