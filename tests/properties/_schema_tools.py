"""Tools with realistic schemas, shared by the schema-derived tests (importable by path for the
YAML export: ``_schema_tools:refund`` with the tests folder on the path)."""

from __future__ import annotations

from typing import Any, Literal

from openprogram import function

REFUND_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "pattern": "^ORD-[0-9]{4}$"},
        "amount": {"type": "number", "minimum": 0, "maximum": 500},
        "reason": {"type": "string", "enum": ["damaged", "late", "other"]},
        "when": {"type": "string", "format": "date"},
        "items": {"type": "array", "items": {"type": "integer", "minimum": 1}, "maxItems": 3},
    },
    "required": ["order_id", "amount", "reason"],
    "additionalProperties": False,
}


def _refund(args: dict[str, Any]) -> str:
    return f"refunded {args['amount']} on {args['order_id']}"


refund: dict[str, Any] = {
    "spec": {"name": "refund", "description": "Refund an order.", "parameters": REFUND_SCHEMA},
    "execute": _refund,
}


@function
def book_hotel(
    city: str,
    nights: int,
    guests: int = 1,
    smoking: bool = False,
    tier: Literal["basic", "suite"] = "basic",
) -> str:
    """Book a hotel room.

    Args:
        city: Where.
        nights: How many nights.
        guests: How many guests.
        smoking: A smoking room.
        tier: Room tier.
    """
    return f"{city} x{nights} for {guests} ({tier})"


@function
def get_order(order_id: str) -> dict[str, Any]:
    """Look an order up.

    Args:
        order_id: The order.
    """
    return {"order_id": order_id, "status": "shipped"}
