package batonotel

import (
	"math"
	"strconv"

	"go.opentelemetry.io/otel/attribute"

	"github.com/baton-go/baton"
)

// Attribute keys, on spans, span events and metrics.
const (
	keyEngine      = attribute.Key("baton.engine")
	keyRecipe      = attribute.Key("baton.recipe")
	keyName        = attribute.Key("baton.lock.name")
	keyAcquire     = attribute.Key("baton.acquire.id")
	keyAttempt     = attribute.Key("baton.acquire.attempt")
	keyPosition    = attribute.Key("baton.queue.position")
	keyToken       = attribute.Key("baton.token")
	keyOwner       = attribute.Key("baton.owner")
	keySession     = attribute.Key("baton.session")
	keyDepth       = attribute.Key("baton.hold.depth")
	keyReentered   = attribute.Key("baton.reentered")
	keyResult      = attribute.Key("baton.result")
	keyCause       = attribute.Key("baton.lost.cause")
	keyLead        = attribute.Key("baton.lost.lead")
	keyEnd         = attribute.Key("baton.hold.end")
	keySuspension  = attribute.Key("baton.suspension.duration")
	keyResource    = attribute.Key("baton.resource")
	keyStoredToken = attribute.Key("baton.stored_token")
	keyStoredOwner = attribute.Key("baton.stored_owner")
	keyOutcome     = attribute.Key("baton.outcome")
	keyCount       = attribute.Key("baton.count")
)

// token makes a token attribute: an int64 as long as it fits (tokens
// start small and grow by one per grant), its decimal text past that.
func token(k attribute.Key, t uint64) attribute.KeyValue {
	if t <= math.MaxInt64 {
		return k.Int64(int64(t))
	}
	return k.String(strconv.FormatUint(t, 10))
}

// lockAttrs are the attributes every span of an acquire or lease carries.
func lockAttrs(e baton.Event) []attribute.KeyValue {
	return []attribute.KeyValue{
		keyName.String(e.Name), keyEngine.String(e.Engine), keyRecipe.String(e.Recipe),
		token(keyAcquire, e.Acquire),
	}
}

// grantAttrs describe the grant.
func grantAttrs(e baton.Event) []attribute.KeyValue {
	kv := []attribute.KeyValue{token(keyToken, e.Token), keyOwner.String(e.Owner)}
	if e.Session != "" {
		kv = append(kv, keySession.String(e.Session))
	}
	return kv
}
