package awsconf

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// The SDK lost answers on a loaded machine, and sent the call again. It hands net/http each
// request body in a wrapper of its own, which it closes as soon as the response headers are in.
// net/http writes the body's Content-Length bytes, then, on the connection's write goroutine,
// reads the body once more to check that nothing is left: io.Copy(io.Discard, body). When that
// goroutine runs late, the SDK has closed the body by then. Read on the closed wrapper answers
// io.EOF, the end the check wants; but the wrapper also has a WriteTo (the serializers' bodies
// are bytes.Readers, and it passes theirs on), io.Copy prefers it, and WriteTo on the closed
// wrapper returns io.EOF as an error. net/http takes that for a failed write and closes the
// connection under the response the SDK is reading ("use of closed network connection"); the
// SDK retries, and a retried ReceiveMessage has raised, unseen, the receive counts of the
// messages of the answer it lost. Over loopback the response is in before the write goroutine
// gets the processor back often enough for tests that count calls to fail; against AWS the same
// race is aws/aws-sdk-go-v2#1825 and #2737.

// readOnlyRequestBodyID names the middleware that gives net/http request bodies without WriteTo.
const readOnlyRequestBodyID = "toolq.ReadOnlyRequestBody"

// addReadOnlyRequestBody adds, at the end of the build step (after serialization, before the
// retries rewind the body and the signer reads it), a middleware that replaces a body with a
// WriteTo by the same body seen as Read and Seek only: net/http then reads it, closed or not,
// with Read.
func addReadOnlyRequestBody(stack *middleware.Stack) error {
	return stack.Build.Add(middleware.BuildMiddlewareFunc(readOnlyRequestBodyID, func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
		req, ok := in.Request.(*smithyhttp.Request)
		if !ok {
			return next.HandleBuild(ctx, in)
		}
		stream, seekable := req.GetStream().(io.ReadSeeker)
		if _, writerTo := stream.(io.WriterTo); !seekable || !writerTo {
			return next.HandleBuild(ctx, in)
		}
		withoutWriteTo, err := req.SetStream(readSeeker{stream})
		if err != nil {
			return middleware.BuildOutput{}, middleware.Metadata{}, fmt.Errorf("awsconf: request body: %w", err)
		}
		in.Request = withoutWriteTo
		return next.HandleBuild(ctx, in)
	}), middleware.After)
}

// readSeeker is a request body that can be read and rewound (for a retry), and nothing more.
type readSeeker struct{ io.ReadSeeker }
