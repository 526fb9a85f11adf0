package redislock

// Exported for the external tests: the key layout helpers.
var (
	EscapeName = escapeName
	SlotOf     = slotOf
	SlotTag    = slotTag
)
