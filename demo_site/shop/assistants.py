"""The shop's assistant: answers customers about their orders and the catalogue, and can ask to cancel an order."""

from django.utils import timezone

from toolcalling import Assistant, ToolContext

from .tools import buy_product, cancel_order, get_order_status, get_product_stock, list_my_orders, search_products


class ShopAssistant(Assistant):
    id = "shop"
    name = "Shop helper"
    description = "Tracks your orders, finds products and can cancel an order that has not shipped yet."
    instructions = (
        "You help customers of a small online shop. Use the tools for every fact about orders, products, "
        "prices and stock; never guess them. You only ever see the signed-in customer's own orders. "
        "If the customer wants to cancel an order, call cancel_order: a staff member confirms it first, "
        "so tell the customer the cancellation is waiting for confirmation. To buy a product, call buy_product: "
        "the customer confirms the purchase on the page first. Shipped or delivered orders "
        "cannot be cancelled. Answer briefly and quote order numbers and dates exactly."
    )
    # The offline demo model breaks keyword ties by this order: "my orders" should list, not ask for a number.
    tools = [list_my_orders, get_order_status, search_products, get_product_stock, cancel_order, buy_product]

    def get_instructions(self, ctx: ToolContext) -> str:
        # The date lets the model say "arrives tomorrow" instead of repeating an ISO date.
        return f"{self.instructions}\nToday is {timezone.localdate():%A, %d %B %Y}."
