"""The partition facade between handlers and storage: leader epoch, high watermark, idempotent-producer
state and fetch wake-ups, per partition. Handlers call this layer, never `brokerd.storage` directly.
"""
