package handler

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/loom-plugins/sandbox-cloudrun/api"
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
// limit maxHeaderBytes) instead of net/http's plain text. The cap stays
// net/http's: the server reads no more of a header block than it did (at
// most maxHeaderBytes and 4 KiB of slack), refuses it before any handler
// runs and closes the connection, so a flood of large headers costs what it
// did. Nothing else a connection carries is touched: only a write that is
// net/http's answer, whole, is replaced, and no answer of the handler's can
// be that text (every one ends in a newline).
func HeaderLimitListener(ln net.Listener, maxHeaderBytes int) net.Listener {
	return &headerLimitListener{Listener: ln, max: maxHeaderBytes}
}

type headerLimitListener struct {
	net.Listener
	max  int
	once sync.Once
	doc  []byte // the 431 answer, built on first use
}

func (l *headerLimitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &headerLimitConn{Conn: c, l: l}, nil
}

// answer is the full HTTP response that replaces net/http's: the problem
// with the headers of every answer of the handler's, and the connection
// closed, as net/http closes it.
func (l *headerLimitListener) answer() []byte {
	l.once.Do(func() {
		p := headerTooLarge(int64(l.max))
		body := append(api.AppendProblem(nil, *p), '\n')
		res := &http.Response{StatusCode: p.Status, ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
			ContentLength: int64(len(body)), Body: io.NopCloser(bytes.NewReader(body)), Close: true}
		setBodyHeaders(res.Header, problemType, len(body))
		var b bytes.Buffer
		_ = res.Write(&b) // to memory: cannot fail
		l.doc = b.Bytes()
	})
	return l.doc
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
