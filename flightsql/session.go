package flightsql

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/flightd/flightd/engine"
)

// Sessions. A Flight SQL session is what a client chose with
// SetSessionOptions or USE: the database its unqualified names resolve in.
// flightd keeps no session state. The client holds it in a cookie, as
// Flight's stateless sessions do, and sends it back with every call: the
// JDBC driver always does, ADBC with its cookie option
// (adbc.flight.sql.rpc.with_cookie_middleware). A session therefore costs
// the server nothing, needs no expiry and survives a restart; a client that
// forges the cookie can set only what SetSessionOptions would let it set,
// and the database is checked again wherever a name is resolved.
//
// The cookie is set in the response headers of the call that changes the
// session (SetSessionOptions, CloseSession, a statement that runs USE),
// where every client's cookie middleware reads it; Java's reads trailers
// only on errors.
//
// What a statement needs from its session travels with it: a prepared
// statement keeps the database it was prepared in, and a query's ticket
// names it, so that a DoGet from another connection (a partitioned read)
// runs in the same database.

// sessionCookie is the name of the cookie that holds a session.
const sessionCookie = "flightd_session"

// maxSessionCookie bounds the encoded session a client may send; a larger
// cookie is ignored.
const maxSessionCookie = 1024

// The session options flightd answers.
const (
	// optionCatalog is Flight SQL's current catalog: flightd has none, so
	// only the empty name is accepted.
	optionCatalog = "catalog"
	// optionSchema is the current database (a schema, in Flight SQL's
	// words): where unqualified table names resolve.
	optionSchema = "schema"
	// optionStreaming makes reads of t$rt and t$changelog unbounded
	// streams of changes (a bool, or the strings "true" and "false").
	optionStreaming = "streaming"
)

// session is a client's session.
type session struct {
	db        string // the current database, as the catalog spells it; "" = the default
	streaming bool
}

// database is where the session's unqualified names resolve.
func (ss session) database() string {
	if ss.db == "" {
		return DefaultDatabase
	}
	return ss.db
}

// sessionOf reads the session the client sent with the call; a missing,
// oversized or malformed cookie is the default session.
func sessionOf(ctx context.Context) session {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, line := range md.Get("cookie") {
		cookies, err := http.ParseCookie(line)
		if err != nil {
			continue
		}
		for _, c := range cookies {
			if c.Name == sessionCookie {
				return decodeSession(c.Value)
			}
		}
	}
	return session{}
}

func decodeSession(v string) session {
	if len(v) > maxSessionCookie {
		return session{}
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return session{}
	}
	var opts flight.GetSessionOptionsResult
	if proto.Unmarshal(b, &opts) != nil {
		return session{}
	}
	var ss session
	if sv, ok := opts.GetSessionOptions()[optionSchema].GetOptionValue().(*pb.SessionOptionValue_StringValue); ok && validName(sv.StringValue) {
		ss.db = sv.StringValue
	}
	if bv, ok := opts.GetSessionOptions()[optionStreaming].GetOptionValue().(*pb.SessionOptionValue_BoolValue); ok {
		ss.streaming = bv.BoolValue
	}
	return ss
}

// boolOption reads a bool session option, also spelled as a string (ADBC
// sends its session options as strings).
func boolOption(v *flight.SessionOptionValue) (bool, bool) {
	switch o := v.GetOptionValue().(type) {
	case *pb.SessionOptionValue_BoolValue:
		return o.BoolValue, true
	case *pb.SessionOptionValue_StringValue:
		return engine.ParseSwitch(o.StringValue)
	}
	return false, false
}

// validName reports whether a database name from a cookie can be one:
// named, printable, and short enough to be a Paimon database.
func validName(s string) bool {
	return s != "" && len(s) <= 255 && !strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f })
}

// options are the session's options as GetSessionOptions reports them.
func (ss session) options() map[string]*flight.SessionOptionValue {
	return map[string]*flight.SessionOptionValue{
		optionCatalog:   {OptionValue: &pb.SessionOptionValue_StringValue{StringValue: ""}},
		optionSchema:    {OptionValue: &pb.SessionOptionValue_StringValue{StringValue: ss.database()}},
		optionStreaming: {OptionValue: &pb.SessionOptionValue_BoolValue{BoolValue: ss.streaming}},
	}
}

// cookie is the Set-Cookie header value that hands ss to the client; the
// default session clears the cookie.
func (ss session) cookie() string {
	if ss == (session{}) {
		return (&http.Cookie{Name: sessionCookie, Value: "", MaxAge: -1}).String()
	}
	opts := map[string]*flight.SessionOptionValue{}
	if ss.db != "" {
		opts[optionSchema] = &flight.SessionOptionValue{OptionValue: &pb.SessionOptionValue_StringValue{StringValue: ss.db}}
	}
	if ss.streaming {
		opts[optionStreaming] = &flight.SessionOptionValue{OptionValue: &pb.SessionOptionValue_BoolValue{BoolValue: true}}
	}
	b, _ := proto.Marshal(&flight.GetSessionOptionsResult{SessionOptions: opts})
	return (&http.Cookie{Name: sessionCookie, Value: base64.RawURLEncoding.EncodeToString(b)}).String()
}

// sendSession hands ss to the client in the response headers.
func sendSession(ctx context.Context, ss session) error {
	if err := grpc.SetHeader(ctx, metadata.Pairs("set-cookie", ss.cookie())); err != nil {
		return status.Errorf(codes.Internal, "flightd: send the session: %v", err)
	}
	return nil
}

// inSession is ctx under which the engine resolves unqualified names in
// the session of the call.
func inSession(ctx context.Context) context.Context {
	ss := sessionOf(ctx)
	return engine.WithStreaming(engine.WithDatabase(ctx, ss.database()), ss.streaming)
}

// lookupDatabase finds db in the catalog, as it is spelled there (names
// compare without case, as in SQL).
func (s *Server) lookupDatabase(ctx context.Context, db string) (string, bool, error) {
	dbs, err := s.eng.Databases(ctx)
	if err != nil {
		return "", false, toStatus(err)
	}
	d, found := engine.FindName(dbs, db)
	return d, found, nil
}

// SetSessionOptions sets the catalog (only "", flightd has none) and the
// schema (a database that exists). Each option is set or refused on its
// own; the refusals are in the result, and a client's unknown option is
// INVALID_NAME.
func (s *Server) SetSessionOptions(ctx context.Context, req *flight.SetSessionOptionsRequest) (*flight.SetSessionOptionsResult, error) {
	ss := sessionOf(ctx)
	errs := map[string]*flight.SetSessionOptionsResultError{}
	refuse := func(name string, v pb.SetSessionOptionsResult_ErrorValue) {
		errs[name] = &flight.SetSessionOptionsResultError{Value: v}
	}
	for name, v := range req.GetSessionOptions() {
		str, isString := v.GetOptionValue().(*pb.SessionOptionValue_StringValue)
		unset := v.GetOptionValue() == nil
		switch name {
		case optionCatalog:
			if !unset && (!isString || str.StringValue != "") {
				refuse(name, flight.SetSessionOptionsResultErrorInvalidValue)
			}
		case optionSchema:
			switch {
			case unset:
				ss.db = ""
			case !isString:
				refuse(name, flight.SetSessionOptionsResultErrorInvalidValue)
			default:
				db, found, err := s.lookupDatabase(ctx, str.StringValue)
				if err != nil {
					return nil, err
				}
				if !found {
					refuse(name, flight.SetSessionOptionsResultErrorInvalidValue)
					continue
				}
				ss.db = db
			}
		case optionStreaming:
			if unset {
				ss.streaming = false
				continue
			}
			on, ok := boolOption(v)
			if !ok {
				refuse(name, flight.SetSessionOptionsResultErrorInvalidValue)
				continue
			}
			ss.streaming = on
		default:
			refuse(name, flight.SetSessionOptionsResultErrorInvalidName)
		}
	}
	if err := sendSession(ctx, ss); err != nil {
		return nil, err
	}
	return &flight.SetSessionOptionsResult{Errors: errs}, nil
}

// GetSessionOptions reports the catalog ("") and the current database.
func (s *Server) GetSessionOptions(ctx context.Context, _ *flight.GetSessionOptionsRequest) (*flight.GetSessionOptionsResult, error) {
	return &flight.GetSessionOptionsResult{SessionOptions: sessionOf(ctx).options()}, nil
}

// CloseSession forgets the session: the client's cookie is cleared, and its
// next call is in the default database.
func (s *Server) CloseSession(ctx context.Context, _ *flight.CloseSessionRequest) (*flight.CloseSessionResult, error) {
	if err := sendSession(ctx, session{}); err != nil {
		return nil, err
	}
	return &flight.CloseSessionResult{Status: flight.CloseSessionResultClosed}, nil
}

// afterUse hands the client the session a USE or SET statement chose.
func afterUse(ctx context.Context, res engine.Result) error {
	if res.Database == "" && res.Streaming == nil {
		return nil
	}
	ss := sessionOf(ctx)
	if res.Database != "" {
		ss.db = res.Database
	}
	if res.Streaming != nil {
		ss.streaming = *res.Streaming
	}
	return sendSession(ctx, ss)
}
