#include "attribution/block_tree.hpp"

#include <atomic>
#include <utility>

namespace gpumem::attribution {

struct Node {
  std::uint64_t key = 0;
  BlockInfo info;
  std::uint32_t priority = 0;
  std::uint32_t references = 1;
  Node* left = nullptr;
  Node* right = nullptr;
};

namespace {

std::atomic<std::size_t> g_nodes{0};

// A fixed pseudo-random priority per key (splitmix64): the treap's shape depends only on its
// keys, whatever the order of events.
std::uint32_t priority_of(std::uint64_t key) noexcept {
  key += 0x9e3779b97f4a7c15ull;
  key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ull;
  key = (key ^ (key >> 27)) * 0x94d049bb133111ebull;
  return static_cast<std::uint32_t>(key ^ (key >> 31));
}

Node* make(std::uint64_t key, const BlockInfo& info) {
  Node* node = new Node{key, info, priority_of(key), 1, nullptr, nullptr};
  g_nodes.fetch_add(1, std::memory_order_relaxed);
  return node;
}

void retain(Node* node) noexcept {
  if (node != nullptr) ++node->references;
}

void drop(Node* node) noexcept {
  std::vector<Node*> pending;
  while (node != nullptr || !pending.empty()) {
    if (node == nullptr) {
      node = pending.back();
      pending.pop_back();
    }
    if (--node->references != 0) {
      node = nullptr;
      continue;
    }
    Node* left = node->left;
    Node* right = node->right;
    delete node;
    g_nodes.fetch_sub(1, std::memory_order_relaxed);
    if (right != nullptr) {
      try {
        pending.push_back(right);
      } catch (...) {
        drop(right);  // no room for the work list: the right subtree by recursion instead
      }
    }
    node = left;
  }
}

// Takes the caller's reference to `node` and returns a node it may change: the same one when
// nothing else shares it, else a copy sharing its children.
Node* own(Node* node) {
  if (node->references == 1) return node;
  Node* copy = new Node(*node);
  g_nodes.fetch_add(1, std::memory_order_relaxed);
  copy->references = 1;
  retain(copy->left);
  retain(copy->right);
  --node->references;
  return copy;
}

const Node* find_node(const Node* node, std::uint64_t key) noexcept {
  while (node != nullptr && node->key != key) node = key < node->key ? node->left : node->right;
  return node;
}

// Splits (taking the reference) into keys < key and keys > key; `key` itself is absent.
std::pair<Node*, Node*> split(Node* node, std::uint64_t key) {
  if (node == nullptr) return {nullptr, nullptr};
  node = own(node);
  if (node->key < key) {
    auto [low, high] = split(node->right, key);
    node->right = low;
    return {node, high};
  }
  auto [low, high] = split(node->left, key);
  node->left = high;
  return {low, node};
}

// Every key of `low` below every key of `high`; takes both references.
Node* merge(Node* low, Node* high) {
  if (low == nullptr) return high;
  if (high == nullptr) return low;
  if (low->priority > high->priority) {
    low = own(low);
    low->right = merge(low->right, high);
    return low;
  }
  high = own(high);
  high->left = merge(low, high->left);
  return high;
}

Node* insert(Node* node, Node* fresh) {
  if (node == nullptr) return fresh;
  if (fresh->priority > node->priority) {
    auto [low, high] = split(node, fresh->key);
    fresh->left = low;
    fresh->right = high;
    return fresh;
  }
  node = own(node);
  if (fresh->key < node->key) {
    node->left = insert(node->left, fresh);
  } else {
    node->right = insert(node->right, fresh);
  }
  return node;
}

// `key` is present below `node`.
Node* erase(Node* node, std::uint64_t key) {
  node = own(node);
  if (node->key == key) {
    Node* joined = merge(node->left, node->right);
    node->left = node->right = nullptr;
    drop(node);
    return joined;
  }
  if (key < node->key) {
    node->left = erase(node->left, key);
  } else {
    node->right = erase(node->right, key);
  }
  return node;
}

}  // namespace

BlockTree::~BlockTree() {
  clear();
}

void BlockTree::insert(std::uint64_t key, const BlockInfo& info) {
  if (const Node* existing = find_node(root_, key)) {
    if (existing->info.bytes == info.bytes && existing->info.stack == info.stack &&
        existing->info.kind == info.kind && existing->info.time_ns == info.time_ns) {
      return;
    }
    erase(key);
  }
  Node* fresh = make(key, info);
  root_ = attribution::insert(root_, fresh);
  ++size_;
  bytes_ += info.bytes;
}

void BlockTree::insert_if_absent(std::uint64_t key, const BlockInfo& info) {
  if (find_node(root_, key) == nullptr) insert(key, info);
}

bool BlockTree::erase(std::uint64_t key) {
  const Node* existing = find_node(root_, key);
  if (existing == nullptr) return false;
  const std::uint64_t bytes = existing->info.bytes;
  root_ = attribution::erase(root_, key);
  --size_;
  bytes_ -= bytes;
  return true;
}

const BlockInfo* BlockTree::find(std::uint64_t key) const noexcept {
  const Node* node = find_node(root_, key);
  return node != nullptr ? &node->info : nullptr;
}

void BlockTree::clear() noexcept {
  drop(root_);
  root_ = nullptr;
  size_ = 0;
  bytes_ = 0;
}

Root BlockTree::share() const noexcept {
  retain(root_);
  return root_;
}

void BlockTree::release(Root root) noexcept {
  drop(const_cast<Node*>(root));
}

Root BlockTree::retain(Root root) noexcept {
  attribution::retain(const_cast<Node*>(root));
  return root;
}

void BlockTree::collect(Root root, std::vector<Entry>& out) {
  std::vector<const Node*> pending;
  if (root != nullptr) pending.push_back(root);
  while (!pending.empty()) {
    const Node* node = pending.back();
    pending.pop_back();
    out.push_back({node->key, node->info});
    if (node->left != nullptr) pending.push_back(node->left);
    if (node->right != nullptr) pending.push_back(node->right);
  }
}

std::size_t BlockTree::count(Root root) noexcept {
  if (root == nullptr) return 0;
  return 1 + count(root->left) + count(root->right);
}

std::size_t BlockTree::nodes_alive() noexcept {
  return g_nodes.load(std::memory_order_relaxed);
}

std::size_t BlockTree::node_bytes() noexcept {
  return sizeof(Node);
}

}  // namespace gpumem::attribution
