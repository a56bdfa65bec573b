package handler

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"

	"github.com/loom-plugins/sandbox-cloudrun/answer"
	"github.com/loom-plugins/sandbox-cloudrun/api"
	"github.com/loom-plugins/sandbox-cloudrun/internal/logline"
	"github.com/loom-plugins/sandbox-cloudrun/telemetry"
)

// netHTTP431 is the whole answer net/http's server writes, by itself and
// before any handler runs, to a request whose header block is over its
// MaxHeaderBytes (server.go, errTooLarge): one write, straight to the
// connection. TestHeaderTooLargeIsAProblem fails if a Go release changes it.
const netHTTP431 = "HTTP/1.1 431 Request Header Fields Too Large\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n" +
	"431 Request Header Fields Too Large"

// HeaderLimitListener wraps the listener of an http.Server whose
// MaxHeaderBytes is maxHeaderBytes, so that the server's answer to a header
// block over it goes out as the service's problem document (header-too-large,
// limit maxHeaderBytes) instead of net/http's plain text, naming its request
// as every answer does (a new request id, in X-Request-Id and the problem's
// instance: the caller's own X-Request-Id is in the block the server did
// not read), and logged as every request is, with that id, on log (the
// service's logger, which adds the request id from the context). The cap
// stays net/http's: the server reads no more of a header block than it did
// (at most maxHeaderBytes and 4 KiB of slack), refuses it before any handler
// runs and closes the connection, so a flood of large headers costs what it
// did. Nothing else a connection carries is touched: only a write that is
// net/http's answer, whole, is replaced, and no answer of the handler's can
// be that text (every one ends in a newline).
func HeaderLimitListener(ln net.Listener, maxHeaderBytes int, log *slog.Logger) net.Listener {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &headerLimitListener{Listener: ln, max: maxHeaderBytes, log: log}
}

type headerLimitListener struct {
	net.Listener
	max int
	log *slog.Logger
}

func (l *headerLimitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &headerLimitConn{Conn: c, l: l}, nil
}

// answer logs the refusal and returns the full HTTP response that replaces
// net/http's: the problem, naming a new request id, with the headers of
// every answer of the handler's, and the connection closed, as net/http
// closes it.
func (l *headerLimitListener) answer() []byte {
	id := telemetry.NewRequestID()
	p := headerTooLarge(int64(l.max))
	p.Instance = id
	body := append(api.AppendProblem(nil, *p), '\n')
	res := &http.Response{StatusCode: p.Status, ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
		ContentLength: int64(len(body)), Body: io.NopCloser(bytes.NewReader(body)), Close: true}
	setBodyHeaders(res.Header, problemType, len(body))
	res.Header.Set(api.RequestIDHeader, id)
	var b bytes.Buffer
	_ = res.Write(&b) // to memory: cannot fail

	// The request line is in the block the server refused: the line has
	// no method, and its route is unmatched, as an unknown path's is.
	req, level := answer.RequestOf(unmatchedRoute, p.Status, 0, p)
	l.log.LogAttrs(telemetry.WithRequestID(context.Background(), id), level, RequestMessage, logline.Attrs(requestLine{Request: req})...)
	return b.Bytes()
}

// headerTooLarge is the problem of a header block over the server's cap.
func headerTooLarge(max int64) *api.Problem {
	return api.NewProblem(api.ProblemHeaderTooLarge,
		fmt.Sprintf("the request's header block (its request line and headers) is over the server's maxHeaderBytes of %d bytes; send fewer or shorter headers", max)).
		WithLimit("maxHeaderBytes", max)
}

type headerLimitConn struct {
	net.Conn
	l *headerLimitListener
}

func (c *headerLimitConn) Write(p []byte) (int, error) {
	if len(p) == len(netHTTP431) && string(p) == netHTTP431 {
		if _, err := c.Conn.Write(c.l.answer()); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// CloseWrite half-closes the connection, as net/http does after its 431 so
// that the client can read the answer.
func (c *headerLimitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
