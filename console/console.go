package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"html/template"
	"net/http"
	"net/url"
	"sync"
	"time"

	"go.uber.org/zap"
)

// templates are the pages, each rendered inside layout.html.
//
//go:embed templates/*.html
var templates embed.FS

// Console serves the console's pages and the probes.
type Console struct {
	src   Source
	log   *zap.Logger
	pages map[string]*template.Template
	// logins caches the credentials that passed Authorize for loginTTL, so that a browser,
	// which sends them with every request, does not cost a SCRAM key derivation each time.
	logins struct {
		sync.Mutex
		ok map[[32]byte]time.Time
	}
}

// loginTTL is how long a checked login is trusted before it is checked again (a changed
// password or a revoked role applies after it at the latest); maxLogins bounds the cache.
const (
	loginTTL  = time.Minute
	maxLogins = 256
)

// New returns the console over src.
func New(src Source, logger *zap.Logger) *Console {
	c := &Console{src: src, log: logger.Named("console"), pages: map[string]*template.Template{}}
	c.logins.ok = map[[32]byte]time.Time{}
	funcs := template.FuncMap{"bytes": func(v int64) string { return formatBytes(float64(v)) },
		"count": func(v int64) string { return formatCount(float64(v)) }, "ru": formatRU,
		"colour": shardColour, "ms": func(d time.Duration) string { return formatCount(float64(d.Microseconds()) / 1000) },
		"clock": func(t time.Time) string { return t.UTC().Format("15:04:05.000") },
		"seg":   url.PathEscape, // a database or collection name as one segment of a path
		"add":   func(a, b float64) float64 { return a + b }, "sub": func(a, b float64) float64 { return a - b },
		"mul": func(a, b float64) float64 { return a * b }, "div": func(a, b float64) float64 { return a / b }}
	for _, page := range []string{"overview", "collection", "nodes", "slow"} {
		c.pages[page] = template.Must(template.New("layout.html").Funcs(funcs).
			ParseFS(templates, "templates/layout.html", "templates/"+page+".html"))
	}
	return c
}

// Register adds the console's routes to mux: the pages under /, and /healthz and /readyz,
// which answer without authentication (probes carry no credentials).
func (c *Console) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", c.healthz)
	mux.HandleFunc("GET /readyz", c.readyz)
	mux.Handle("GET /{$}", c.page(c.overview))
	mux.Handle("GET /collections/{db}/{coll}", c.page(c.collection))
	mux.Handle("GET /nodes", c.page(c.nodes))
	mux.Handle("GET /slow", c.page(c.slow))
}

// healthz answers 200 while the process serves HTTP at all.
func (c *Console) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// readyz answers 200 when the server serves (Source.Ready), else 503 with what is missing.
func (c *Console) readyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := c.src.Ready(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready: " + err.Error() + "\n"))
		return
	}
	_, _ = w.Write([]byte("ready\n"))
}

// view renders one page: it returns the page's template name and data, or a status code
// other than 200 (404 for a collection that does not exist).
type view func(r *http.Request) (page string, data any, status int)

// page serves v behind authentication when access control is on.
func (c *Console) page(v view) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.src.AuthEnabled() {
			if status := c.authorized(r); status != http.StatusOK {
				if status == http.StatusUnauthorized {
					w.Header().Set("WWW-Authenticate", `Basic realm="cleave", charset="UTF-8"`)
				}
				http.Error(w, "the console needs a user with the cluster's monitoring privileges (clusterAdmin, root): "+
					http.StatusText(status), status)
				return
			}
		}
		name, data, status := v(r)
		if status != http.StatusOK {
			http.Error(w, http.StatusText(status), status)
			return
		}
		var buf bytes.Buffer
		if err := c.pages[name].Execute(&buf, data); err != nil {
			c.log.Error("rendering a console page", zap.String("page", name), zap.Error(err))
			http.Error(w, "cannot render the page: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(buf.Bytes())
	})
}

// authorized checks r's basic-authentication credentials, through the cache of recent
// logins: 200 for a user who may read the console, 401 without credentials or with wrong
// ones, 403 for a user without the privileges.
func (c *Console) authorized(r *http.Request) int {
	user, password, ok := r.BasicAuth()
	if !ok {
		return http.StatusUnauthorized
	}
	key := sha256.Sum256([]byte(user + "\x00" + password))
	now := time.Now()
	c.logins.Lock()
	until, cached := c.logins.ok[key]
	c.logins.Unlock()
	if cached && now.Before(until) {
		return http.StatusOK
	}
	known, allowed := c.src.Authorize(user, password)
	if !allowed {
		c.log.Info("console login refused", zap.String("user", user), zap.Bool("authenticated", known),
			zap.String("remote", r.RemoteAddr))
		if known {
			return http.StatusForbidden
		}
		return http.StatusUnauthorized
	}
	c.logins.Lock()
	defer c.logins.Unlock()
	if len(c.logins.ok) >= maxLogins {
		clear(c.logins.ok)
	}
	c.logins.ok[key] = now.Add(loginTTL)
	return http.StatusOK
}
