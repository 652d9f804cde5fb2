//! Assignment leases, the hook log and the webhook refusal record.
