package reliability

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// apiRouter is api/openapi.yaml, loaded and validated once.
var apiRouter = sync.OnceValues(func() (routers.Router, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile("../api/openapi.yaml")
	if err != nil {
		return nil, fmt.Errorf("api/openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("api/openapi.yaml: %w", err)
	}
	doc.Servers = nil
	return legacy.NewRouter(doc)
})

// validResponse checks a response against api/openapi.yaml: a route the
// document has must answer as the document says for that status; a path or
// method it does not have must get a 404 or 405 problem. The request body
// is not validated (most of these requests are meant to be wrong).
func validResponse(method, path string, r response) error {
	router, err := apiRouter()
	if err != nil {
		return err
	}
	req, err := http.NewRequest(method, "http://service"+path, nil)
	if err != nil {
		return err
	}
	route, params, err := router.FindRoute(req)
	if err == nil && route.Path != req.URL.Path {
		// the document's router is lenient (a trailing slash matches);
		// the service's is not
		err = fmt.Errorf("no route %s", req.URL.Path)
	}
	if err != nil {
		if r.status != http.StatusNotFound && r.status != http.StatusMethodNotAllowed {
			return fmt.Errorf("openapi: %s %s is not in the document, yet it got %d", method, path, r.status)
		}
		_, perr := asProblem(r)
		return perr
	}
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 r.status,
		Header:                 r.header,
		Body:                   io.NopCloser(bytes.NewReader(r.body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("openapi: %s %s → %s does not match the document: %v", method, path, r, err)
	}
	return nil
}
