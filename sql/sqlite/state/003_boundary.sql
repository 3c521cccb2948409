-- recon state store, schema version 3: keys a t1 statement settled near the end
-- of its day. Their local rows lie in [end - margin, end), so the next day reads
-- them again through its margin; without its statement entries (they were in
-- this day's file) it would otherwise call them extra.
CREATE TABLE boundary_keys (
	job           TEXT    NOT NULL,
	mode          TEXT    NOT NULL,
	window_end_ms INTEGER NOT NULL,
	key           TEXT    NOT NULL,
	PRIMARY KEY (job, mode, window_end_ms, key)
) WITHOUT ROWID;
