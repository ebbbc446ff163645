"""The support demo's world: an online shop's order database (in memory), the support agent's tools over it,
and the scripted model's turns.

The agent handles a refund request: it identifies the customer, looks up the order, tries to refund before
asking the customer (planguard's gate denies it: no refund before the customer confirmed), confirms, refunds
and tells the customer. The plan and the gate are declared in ``examples/demo/support.yaml``: phases matched
by tool name, no coding rules involved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, ToolException, tool

__all__ = ["CONFIG", "FINAL_ANSWER", "TASK", "Shop", "make_tools", "script"]

CONFIG = Path(__file__).resolve().parent / "support.yaml"

TASK = (
    "Message from maria.lopez@example.com: Hi, the blender I ordered arrived with a cracked jug. "
    "I'd like my money back, please."
)

FINAL_ANSWER = (
    "Refunded order O-5531 ($89.00 to the Visa ending 4242) after the customer confirmed, and told her it "
    "takes 3-5 business days."
)


@dataclass
class Order:
    id: str
    customer_id: str
    item: str
    total: float
    status: str  # placed | delivered | cancelled | refunded
    payment: str


@dataclass
class Shop:
    """The in-memory order database the tools read and change."""

    customers: dict[str, dict[str, str]] = field(default_factory=dict)
    orders: dict[str, Order] = field(default_factory=dict)
    confirmed: set[str] = field(default_factory=set)  # orders the customer agreed to have changed
    refunds: list[tuple[str, float]] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)

    @classmethod
    def sample(cls) -> Shop:
        shop = cls()
        shop.customers["C-1042"] = {"name": "Maria Lopez", "email": "maria.lopez@example.com"}
        shop.customers["C-2210"] = {"name": "Tom Becker", "email": "tom.becker@example.com"}
        for order in (
            Order("O-5531", "C-1042", "Blender BX-300", 89.00, "delivered", "Visa ending 4242"),
            Order("O-5540", "C-1042", "Coffee grinder", 45.50, "placed", "Visa ending 4242"),
            Order("O-5602", "C-2210", "Kettle", 39.90, "delivered", "PayPal"),
        ):
            shop.orders[order.id] = order
        return shop


def make_tools(shop: Shop) -> list[BaseTool]:
    """``find_customer_by_email``, ``list_orders``, ``get_order``, ``confirm_with_customer``,
    ``refund_order``, ``cancel_order`` and ``send_message`` over ``shop``."""

    def order(order_id: str) -> Order:
        found = shop.orders.get(order_id)
        if found is None:
            raise ToolException(f"no order {order_id!r}")
        return found

    @tool
    def find_customer_by_email(email: str) -> str:
        """Find a customer's id and name by e-mail address."""
        for cid, c in shop.customers.items():
            if c["email"].lower() == email.strip().lower():
                return f"{cid}: {c['name']} <{c['email']}>"
        raise ToolException(f"no customer with e-mail {email!r}")

    @tool
    def list_orders(customer_id: str) -> str:
        """List a customer's orders (id, item, total, status)."""
        rows = [o for o in shop.orders.values() if o.customer_id == customer_id]
        if not rows:
            raise ToolException(f"no orders for customer {customer_id!r}")
        return "\n".join(f"{o.id}  {o.item}  ${o.total:.2f}  {o.status}" for o in rows)

    @tool
    def get_order(order_id: str) -> str:
        """Show one order in full."""
        o = order(order_id)
        return (
            f"{o.id}: {o.item}, ${o.total:.2f}, {o.status}, paid with {o.payment}, customer {o.customer_id}"
        )

    @tool
    def confirm_with_customer(order_id: str, question: str) -> str:
        """Ask the customer to confirm a change to an order; returns their answer."""
        order(order_id)
        shop.confirmed.add(order_id)  # the simulated customer agrees
        return "Customer: Yes, please go ahead."

    @tool
    def refund_order(order_id: str, reason: str) -> str:
        """Refund a delivered order to its original payment method."""
        o = order(order_id)
        if o.status != "delivered":
            raise ToolException(f"{order_id} is {o.status}; only a delivered order can be refunded")
        o.status = "refunded"
        shop.refunds.append((o.id, o.total))
        return f"Refunded ${o.total:.2f} to {o.payment} for {o.id} ({reason})."

    @tool
    def cancel_order(order_id: str) -> str:
        """Cancel an order that has not shipped yet."""
        o = order(order_id)
        if o.status != "placed":
            raise ToolException(f"{order_id} is {o.status}; only a placed order can be cancelled")
        o.status = "cancelled"
        return f"Cancelled {o.id}."

    @tool
    def send_message(text: str) -> str:
        """Send a message to the customer."""
        shop.messages.append(text)
        return "sent"

    return [
        find_customer_by_email,
        list_orders,
        get_order,
        confirm_with_customer,
        refund_order,
        cancel_order,
        send_message,
    ]


def script() -> list[Any]:
    """The scripted model's turns (one per model call)."""
    from planguard_langchain.testing import call, turn

    return [
        turn(
            call("find_customer_by_email", email="maria.lopez@example.com"),
            text="First, find the customer's account.",
        ),
        turn(call("list_orders", customer_id="C-1042")),
        turn(call("get_order", order_id="O-5531"), text="The blender is O-5531; checking it was delivered."),
        turn(
            call("refund_order", order_id="O-5531", reason="arrived damaged (cracked jug)"),
            text="Delivered and damaged: it qualifies for a refund. Refunding.",
        ),
        turn(
            call(
                "confirm_with_customer",
                order_id="O-5531",
                question="Shall I refund $89.00 for the Blender BX-300 (O-5531) to your Visa ending 4242?",
            ),
            text="Right, the customer has to confirm first.",
        ),
        turn(call("refund_order", order_id="O-5531", reason="arrived damaged (cracked jug)")),
        turn(
            call(
                "send_message",
                text="Your refund of $89.00 for order O-5531 is on its way to your Visa ending 4242; "
                "it takes 3-5 business days. Sorry about the cracked jug!",
            )
        ),
    ]
