package runpod

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"
)

// Defaults. Every one can be changed with an Option.
const (
	// DefaultBaseURL is Runpod's REST v2 API. Request paths ("/pods",
	// "/network-volumes/{id}", ...) are relative to it.
	DefaultBaseURL = "https://api.runpod.io/v2"
	// DefaultUserAgent is sent as User-Agent unless WithUserAgent says
	// otherwise.
	DefaultUserAgent = "overbrainer-go-runpod/1"
	// DefaultMaxAttempts is how many times a retryable request is sent in
	// all (the first try included).
	DefaultMaxAttempts = 5
	// DefaultMaxWait caps each wait between attempts, whether it comes from
	// the backoff or from a Retry-After header.
	DefaultMaxWait = 30 * time.Second
	// DefaultTimeout bounds one HTTP exchange when the client makes its own
	// http.Client (see WithHTTPClient).
	DefaultTimeout = 60 * time.Second
)

// baseWait is the first backoff step; each retry doubles it, up to maxWait.
const baseWait = 500 * time.Millisecond

// maxSuccessBody bounds a 2xx body. A pod list of a large account is well
// under this; a body over it is a fault, not something to truncate.
const maxSuccessBody = 64 << 20

// Client talks to Runpod's REST v2 API. It is safe for concurrent use. Make one with New.
type Client struct {
	key         string
	baseURL     string
	userAgent   string
	log         *slog.Logger
	maxAttempts int
	maxWait     time.Duration
	debug       bool
	createLooks []time.Duration
	rc          *resty.Client
	// rcPaged sends a call with its own timeout (a page of a listing,
	// bounded by its size: see pageTimeout): hc without its overall one.
	rcPaged *resty.Client
	// timeout is hc's, which bounds every other exchange; podReadTime
	// is what a page's timeout adds for each pod it asks for.
	timeout, podReadTime time.Duration
	pace                 *pacer // nil when pacing is off
	// stream sends requests whose answer is read for as long as it
	// lasts (a log stream): hc without its overall timeout.
	stream *http.Client

	// Seams for tests: how the client waits and reads the clock.
	sleep func(ctx context.Context, d time.Duration) error
	now   func() time.Time
}

// Option configures a Client in New. An option given a nonsensical value
// makes New fail with an error wrapping ErrInvalid.
type Option func(*config) error

type config struct {
	baseURL     string
	userAgent   string
	httpClient  *http.Client
	log         *slog.Logger
	maxAttempts int
	maxWait     time.Duration
	debug       bool
	createLooks []time.Duration
	noPacing    bool
}

// WithCreateLooks sets the waits before each listing CreatePod makes to
// find the pod of a create whose outcome is unknown (default
// DefaultCreateLooks): 1 to 20 waits, each positive and at most 10
// minutes. Only once the last listing shows no pod may the create be sent
// again.
func WithCreateLooks(waits ...time.Duration) Option {
	return func(c *config) error {
		if len(waits) < 1 || len(waits) > 20 {
			return invalidf("WithCreateLooks: %d waits not in 1..20", len(waits))
		}
		for _, w := range waits {
			if w <= 0 || w > 10*time.Minute {
				return invalidf("WithCreateLooks: wait %s not in (0, 10m]", w)
			}
		}
		c.createLooks = append([]time.Duration(nil), waits...)
		return nil
	}
}

// WithBaseURL points the client at another REST v2 root, such as a fake
// Runpod in tests ("http://127.0.0.1:8080/v2"). It must be an absolute http
// or https URL without credentials, query or fragment.
func WithBaseURL(u string) Option {
	return func(c *config) error {
		v, err := checkURL("base URL", u)
		c.baseURL = v
		return err
	}
}

// WithHTTPClient makes the client send its requests through hc (a copy of
// it: hc itself is not modified). hc's Timeout bounds each attempt, not the
// whole call with its retries; bound that with the context. A page of
// ListPods gets it plus a share for each pod the page asks for. Its
// CheckRedirect is not used: the client follows no redirect.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) error {
		if hc == nil {
			return invalidf("WithHTTPClient: nil *http.Client")
		}
		c.httpClient = hc
		return nil
	}
}

// WithLogger sends the client's log lines to l. Each HTTP attempt is logged
// at debug level with its method, path, status, attempt number and wait
// before a retry. Log lines never hold the API key or a secret's value, and
// hold no bodies unless WithDebug asks for dumps.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return invalidf("WithLogger: nil *slog.Logger")
		}
		c.log = l
		return nil
	}
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option {
	return func(c *config) error {
		if strings.TrimSpace(ua) == "" || strings.ContainsAny(ua, "\r\n") {
			return invalidf("WithUserAgent: empty or multi-line user agent")
		}
		c.userAgent = ua
		return nil
	}
}

// WithRetry sets how many times a retryable request is sent in all
// (maxAttempts ≥ 1; 1 means never retry) and the longest wait between two
// attempts (maxWait > 0). maxWait caps the exponential backoff. A 429
// whose Retry-After, or whose RateLimit header's exhausted window, asks
// for a longer wait than maxWait is not retried: it fails at once with a
// *RateLimitError saying how long to wait. A 502, 503 or 504 asking for
// longer is retried after maxWait.
func WithRetry(maxAttempts int, maxWait time.Duration) Option {
	return func(c *config) error {
		if maxAttempts < 1 || maxAttempts > 100 {
			return invalidf("WithRetry: max attempts %d not in 1..100", maxAttempts)
		}
		if maxWait <= 0 {
			return invalidf("WithRetry: max wait %s must be positive", maxWait)
		}
		c.maxAttempts, c.maxWait = maxAttempts, maxWait
		return nil
	}
}

// WithDebug, when on, also logs a dump of every HTTP exchange that got an
// answer (method, URL, headers, request and response bodies) at debug level
// on the client's logger. In a dump the Authorization header is redacted;
// the API key and the secret values a call carries are replaced by
// [REDACTED] wherever they appear; the values of a pod's env, where secrets
// live, are redacted too; the body of a request that carries a secret
// (CreateSecret) is left out; and each body is cut at 64 KiB.
func WithDebug(on bool) Option {
	return func(c *config) error {
		c.debug = on
		return nil
	}
}

// WithPacing turns the client's pacing on (the default) or off. With it
// on, the client reads the RateLimit and RateLimit-Policy headers of every
// answer and holds a request back while a window of the quota is used up,
// rather than send it into a 429. All the clients of one API key and base
// URL in a process share what they learn, so a program that makes a client
// per run is paced as one.
func WithPacing(on bool) Option {
	return func(c *config) error {
		c.noPacing = !on
		return nil
	}
}

// New makes a client that authenticates with apiKey (sent only as
// "Authorization: Bearer <key>", never in a URL, a log line or an error).
func New(apiKey string, opts ...Option) (*Client, error) {
	if strings.TrimSpace(apiKey) == "" {
		return nil, invalidf("empty API key")
	}
	if strings.ContainsFunc(apiKey, func(r rune) bool { return r < 0x21 || r == 0x7f }) {
		return nil, invalidf("API key contains whitespace or control characters")
	}
	cfg := config{
		baseURL:     DefaultBaseURL,
		userAgent:   DefaultUserAgent,
		log:         slog.New(slog.DiscardHandler),
		maxAttempts: DefaultMaxAttempts,
		maxWait:     DefaultMaxWait,
		createLooks: DefaultCreateLooks,
	}
	for _, o := range opts {
		if o == nil {
			return nil, invalidf("nil Option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	var hc http.Client
	if cfg.httpClient != nil {
		hc = *cfg.httpClient
	} else {
		hc.Timeout = DefaultTimeout
	}
	// Never follow a redirect: net/http would resend the Authorization
	// header to the same host on another port, and a POST body (a secret's
	// value) anywhere. once turns the 3xx it gets instead into an error.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c := &Client{
		key:         apiKey,
		baseURL:     cfg.baseURL,
		userAgent:   cfg.userAgent,
		log:         cfg.log,
		maxAttempts: cfg.maxAttempts,
		maxWait:     cfg.maxWait,
		debug:       cfg.debug,
		createLooks: cfg.createLooks,
		sleep:       sleepCtx,
		now:         time.Now,
	}
	if !cfg.noPacing {
		c.pace = pacerFor(c.baseURL, apiKey)
	}
	streamHC := hc
	streamHC.Timeout = 0
	c.stream = &streamHC
	// resty builds and sends each single attempt; the retry loop is ours
	// (see do). Its own retries stay off (RetryCount 0): they cap
	// Retry-After at RetryMaxWaitTime (2 s by default) without saying so,
	// and would resend POST /pods blindly.
	// Its debug dump stays off too: it cannot show a body it does not
	// parse, so the client dumps instead (see dump).
	// The headers every request carries are set once, here.
	newRC := func(hc *http.Client) *resty.Client {
		return resty.NewWithClient(hc).
			SetBaseURL(c.baseURL).
			SetRetryCount(0).
			SetLogger(restyLogger{c}).
			SetHeader("Authorization", "Bearer "+apiKey).
			SetHeader("Accept", "application/json, application/problem+json").
			SetHeader("User-Agent", c.userAgent).
			SetPreRequestHook(emptyBody)
	}
	c.rc, c.rcPaged = newRC(&hc), newRC(&streamHC)
	c.timeout, c.podReadTime = hc.Timeout, listedPodReadTime
	return c, nil
}

// emptyBody takes away the body of a request that has none (a DELETE, an
// action without options): resty may give it a reader of its own, which
// net/http must probe for data with a timer, and even http.NoBody costs
// net/http a reader to write, while a nil body costs nothing and goes out
// the same.
func emptyBody(_ *resty.Client, req *http.Request) error {
	if req.ContentLength == 0 && req.Body != nil {
		if req.Body != http.NoBody {
			req.Body.Close()
		}
		req.Body, req.GetBody = nil, nil
	}
	return nil
}

// BaseURL returns the REST root the client talks to.
func (c *Client) BaseURL() string { return c.baseURL }

// checkURL validates a base URL. Its errors never quote the URL
// itself: user info, a query or a fragment may hold a key, and a URL that
// does not parse may hold one anywhere.
func checkURL(what, raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", invalidf("%s is not a valid URL", what)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", invalidf("%s: scheme must be http or https", what)
	case u.User != nil:
		return "", invalidf("%s: must not carry credentials", what)
	case u.Host == "":
		return "", invalidf("%s: no host", what)
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", invalidf("%s %s: must not have a query or fragment", what, (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String())
	}
	return strings.TrimRight(raw, "/"), nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// restyLogger routes resty's own output (its warnings) to
// the client's slog logger, scrubbed, instead of resty's default stderr.
type restyLogger struct{ c *Client }

func (l restyLogger) Errorf(f string, v ...any) { l.c.log.Error(l.c.scrub(fmt.Sprintf(f, v...))) }
func (l restyLogger) Warnf(f string, v ...any)  { l.c.log.Warn(l.c.scrub(fmt.Sprintf(f, v...))) }
func (l restyLogger) Debugf(f string, v ...any) {
	l.c.log.Debug("runpod: http dump", "dump", l.c.scrub(fmt.Sprintf(f, v...)))
}
