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
// (handle, NUL, database, NUL, part, NUL, SQL), never panics; what flightd encodes
// decodes to the same ticket, and a decoded ticket encodes to one that
// decodes the same.
func FuzzStatementTicket(f *testing.F) {
	for _, s := range []ticket{{"0123456789abcdef", "", "", "SELECT 1"}, {"h", "", "", ""}, {"", "shop", "", "SELECT '\x00'"},
		{"h", "x y", "", "SELECT 1; -- \r\n"}, {"", "default", "1/4@7;0:3,2:9", "SELECT * FROM t"}} {
		tkt, err := encodeTicket(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tkt)
	}
	f.Add([]byte("\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(handle []byte) {
			tk := decodeTicket(handle)
			if strings.Contains(tk.handle, "\x00") || strings.Contains(tk.db, "\x00") || strings.Contains(tk.part, "\x00") {
				t.Fatalf("ticket %q holds a NUL in its handle, database or part", tk)
			}
			enc, err := encodeTicket(tk)
			if err != nil {
				t.Fatalf("encode %q: %v", tk, err)
			}
			var a anypb.Any
			var q pb.TicketStatementQuery
			if err := proto.Unmarshal(enc, &a); err != nil {
				t.Fatalf("ticket for %q: %v", tk, err)
			}
			if err := a.UnmarshalTo(&q); err != nil {
				t.Fatalf("ticket for %q: %v", tk, err)
			}
			if tk2 := decodeTicket(q.GetStatementHandle()); tk2 != tk {
				t.Fatalf("ticket for %q decodes as %q", tk, tk2)
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
