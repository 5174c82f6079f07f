"""Webhooks: target checks (:mod:`.targets`), signed sending (:mod:`.sender`) and the
delivery worker (:mod:`.worker`) that takes messages off the storage's queue."""
