package lockdown

import "runtime"

const goarchHere = runtime.GOARCH
