package console

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/flightd/flightd/internal/admit"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
)

//go:embed assets
var assets embed.FS

// Authenticator checks credentials as the Flight port does
// (flightsql.PasswordAuth): Validate a user name and password, IsValid a
// bearer token (returning its user name as a string).
type Authenticator interface {
	Validate(user, password string) (token string, err error)
	IsValid(token string) (any, error)
}

// Options say where the page's data comes from. Every field may be zero:
// what it would show is then left out.
type Options struct {
	Lake      *lakestream.Service
	Admission *admit.Controller
	// Cluster is the node's cluster (sys.nodes, sys.tiering's owner);
	// nil: none shown.
	Cluster lakestream.Cluster
	// Freshness returns a table's tiering interval.
	Freshness func(*lake.Table) time.Duration
	// Streams returns the streaming reads open.
	Streams func() int
	// Auth, when set, is required of every request; nil: the page is open.
	Auth    Authenticator
	Version string
	Started time.Time
	// MemoryLimit and MemoryCeiling are the server's memory bounds in
	// bytes (--memory-limit, --memory-ceiling), shown beside its memory.
	MemoryLimit, MemoryCeiling int64
	// Timeout bounds the reads of one state (default 10s).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Console serves the operator's page.
type Console struct {
	opts  Options
	lg    *slog.Logger
	sizes sizeCache
}

// Prefix is where Handler serves the page.
const Prefix = "/ui/"

// New returns the page over opts.
func New(opts Options) *Console {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	return &Console{opts: opts, lg: opts.Logger}
}

// Handler serves the page under Prefix: /ui/ (the page, its script and
// style sheet), GET /ui/api/state and POST /ui/api/cancel. Mount it at
// Prefix.
func (c *Console) Handler() http.Handler {
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	files := http.StripPrefix(Prefix, http.FileServerFS(static))
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+Prefix+"api/state", c.serveState)
	mux.Handle("POST "+Prefix+"api/cancel", http.NewCrossOriginProtection().Handler(http.HandlerFunc(c.serveCancel)))
	mux.HandleFunc(Prefix+"api/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no %s %s: the page's API is GET %sapi/state and POST %sapi/cancel", r.Method, r.URL.Path, Prefix, Prefix)})
	})
	mux.Handle(Prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "flightd: the page's files are read with GET", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))
	return c.secure(mux)
}

// secure sets the headers of every answer and checks the credentials of
// every request.
func (c *Console) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// Nothing but the page's own files, and never inside another site's frame.
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		user, err := c.authenticate(r)
		if err != nil {
			h.Set("WWW-Authenticate", `Basic realm="flightd", charset="UTF-8"`)
			http.Error(w, "flightd: "+err.Error(), http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
	})
}

type userKey struct{}

// userOf is the user a request authenticated as ("" on an open page).
func userOf(r *http.Request) string {
	u, _ := r.Context().Value(userKey{}).(string)
	return u
}

// authenticate checks r's credentials: HTTP Basic with the Flight port's
// user name and password, or a bearer token its login returned.
func (c *Console) authenticate(r *http.Request) (user string, err error) {
	a := c.opts.Auth
	if a == nil {
		return "", nil
	}
	if u, p, ok := r.BasicAuth(); ok {
		if _, err := a.Validate(u, p); err != nil {
			c.lg.Warn("operator's page: wrong user name or password", "user", u, "remote", r.RemoteAddr)
			return "", errors.New("wrong user name or password")
		}
		return u, nil
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		v, err := a.IsValid(strings.TrimSpace(tok))
		if err != nil {
			return "", errors.New("invalid or revoked token; log in with the user name and password")
		}
		u, _ := v.(string)
		return u, nil
	}
	return "", errors.New("this page needs the user name and password of the Flight port")
}

func (c *Console) serveState(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), c.opts.Timeout)
	defer cancel()
	writeJSON(w, http.StatusOK, c.state(ctx, userOf(r)))
}

// maxCancelBody bounds the body of a cancel request.
const maxCancelBody = 4 << 10

// serveCancel ends a statement: {"id": N}.
func (c *Console) serveCancel(w http.ResponseWriter, r *http.Request) {
	// A site can post a form or text anywhere without asking; JSON it can
	// send only after a preflight this server never answers.
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": `send {"id": <statement id>} as application/json`})
		return
	}
	var req struct {
		ID *int64 `json:"id"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxCancelBody+1))
	if err == nil && len(body) > maxCancelBody {
		err = errors.New("the body is too long")
	}
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err == nil && req.ID == nil {
		err = errors.New(`no "id"`)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf(`send {"id": <statement id>}: %v`, err)})
		return
	}
	id := *req.ID
	a := c.opts.Admission
	if a == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "this server lists no statements"})
		return
	}
	var target *admit.Info
	for _, s := range a.Statements() {
		if s.ID == id {
			target = &s
			break
		}
	}
	if target != nil {
		err = a.Cancel(id)
	}
	if target == nil || errors.Is(err, admit.ErrUnknownStatement) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("statement %d is neither running nor queued (it may have ended)", id)})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	by := userOf(r)
	if by == "" {
		by = "(no authentication configured)"
	}
	c.lg.Info("statement cancelled from the operator's page", "id", id, "by", by, "remote", r.RemoteAddr,
		"statement_user", target.User, "client", target.Client, "state", target.State, "sql", target.SQL)
	writeJSON(w, http.StatusOK, map[string]any{"cancelled": id})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
