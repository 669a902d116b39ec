"""The demo shop app: products, orders, and the tools and assistant that answer customers about them."""
